package controller

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/loglevel"
	"github.com/quotagate/quotagate/pkg/quota"
)

// runRecords writes the charge labels of running pods that no manager admitted (created
// before their namespace opted in, ungated by someone else, admitted by a version that
// wrote no admitted-labels) into their quotagate.io/admitted-labels annotation
// (quota.Record), so that a manager that starts after this one charges them by the
// same labels, whatever a tenant relabels them to. A failed write is handed back to
// the core and tried again after a backoff (retryBackoff); a write is
// idempotent, so one whose answer was lost does no harm when sent again.
func (c *Controller) runRecords(ctx context.Context) {
	backoff := retryBackoff()
	delay := time.Duration(0)
	for {
		if delay > 0 {
			t := c.opts.Clock.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
		} else {
			select {
			case <-ctx.Done():
				return
			case <-c.recordKick:
			}
		}
		failed := false
		for _, r := range c.core.TakeRecords() {
			if err := c.record(ctx, r); err != nil {
				failed = true
				c.core.RecordAgain(r.Pod.UID)
				log.FromContext(ctx).V(loglevel.Details).Info("Recording a running pod's charge labels failed; retrying",
					"pod", klog.KRef(r.Pod.Namespace, r.Pod.Name), "error", err.Error())
			}
		}
		delay = 0
		if failed {
			delay = backoff.Step()
		} else {
			backoff = retryBackoff()
		}
	}
}

// signalRecords wakes runRecords.
func (c *Controller) signalRecords() {
	select {
	case c.recordKick <- struct{}{}:
	default:
	}
}

// record writes one pod's charge labels. The patch names the pod's UID, which the API
// server refuses to change: it never lands on another pod of the same name. A pod gone
// needs no record.
func (c *Controller) record(ctx context.Context, r quota.Record) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":         r.Pod.UID,
		"annotations": map[string]string{v1alpha1.AdmittedLabelsAnnotation: quota.AdmittedLabelsText(r.Labels)},
	}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.UngateTimeout)
	defer cancel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.Pod.Namespace, Name: r.Pod.Name}}
	err = c.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil && pod.UID == "" {
		// Refused as a change of UID: the name belongs to another pod now.
		if _, gone, rerr := c.readFresh(ctx, r.Pod); rerr == nil && gone {
			return nil
		}
	}
	return err
}
