package controller

import "github.com/quotagate/quotagate/pkg/quota"

// Queues is the admission core's read side, for the views that only read (the
// visibility API). Its order and reasons are current only while Leading.
func (c *Controller) Queues() quota.Reader { return c.core.Reader() }

// Leading reports whether this replica runs the admission loop: only the leader's
// queues are evaluated, so only the leader's views tell the truth.
func (c *Controller) Leading() bool { return c.leading.Load() }
