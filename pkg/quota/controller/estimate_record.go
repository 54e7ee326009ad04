package controller

import (
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/visibility"
)

// EstimateRecord is budget's track record since this manager started; false when the
// estimator is off or has judged no admission in it yet.
func (c *Controller) EstimateRecord(budget quota.BudgetKey) (estimate.Record, bool) {
	return c.estimates.Record(budget)
}

// The visibility API shows a pod's status with its budget's track record.
var _ visibility.EstimateRecords = (*Controller)(nil)
