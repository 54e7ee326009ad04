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
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/loglevel"
	"github.com/quotagate/quotagate/pkg/quota"
)

// recordWriter writes the charge labels of running pods that no manager admitted (created
// before their namespace opted in, ungated by someone else, admitted by a version that
// wrote no admitted-labels) into their quotagate.io/admitted-labels annotation
// (quota.Record), so that a manager that starts after this one charges them by the
// same labels, whatever a tenant relabels them to. A failed write is handed back to
// the core and tried again after a backoff (retryBackoff); a write is
// idempotent, so one whose answer was lost does no harm when sent again. It runs on the
// leader only.
type recordWriter struct {
	core   *quota.AdmissionQueue
	client client.Client
	clock  clock.Clock
	// timeout bounds each request (the manager's --ungate-timeout).
	timeout time.Duration
	// readFresh reads a pod from the API server itself (Controller.readFresh).
	readFresh func(ctx context.Context, ref quota.PodRef) (*corev1.Pod, bool, error)
	// kick wakes run; it holds at most one signal.
	kick chan struct{}
}

// newRecordWriter returns the records writer of c, once c has its clients.
func (c *Controller) newRecordWriter() *recordWriter {
	return &recordWriter{core: c.core, client: c.client, clock: c.opts.Clock, timeout: c.opts.UngateTimeout,
		readFresh: c.readFresh, kick: make(chan struct{}, 1)}
}

// run writes the records the core hands out until ctx ends.
func (w *recordWriter) run(ctx context.Context) {
	backoff := retryBackoff()
	delay := time.Duration(0)
	for {
		if delay > 0 {
			t := w.clock.NewTimer(delay)
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
			case <-w.kick:
			}
		}
		failed := false
		for _, r := range w.core.TakeRecords() {
			if err := w.write(ctx, r); err != nil {
				failed = true
				w.core.RecordAgain(r.Pod.UID)
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

// signal wakes run.
func (w *recordWriter) signal() { signal(w.kick) }

// write writes one pod's charge labels. The patch names the pod's UID, which the API
// server refuses to change: it never lands on another pod of the same name. A pod gone
// needs no record.
func (w *recordWriter) write(ctx context.Context, r quota.Record) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":         r.Pod.UID,
		"annotations": map[string]string{v1alpha1.AdmittedLabelsAnnotation: quota.AdmittedLabelsText(r.Labels)},
	}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.Pod.Namespace, Name: r.Pod.Name}}
	err = w.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil && pod.UID == "" {
		// Refused as a change of UID: the name belongs to another pod now.
		if _, gone, rerr := w.readFresh(ctx, r.Pod); rerr == nil && gone {
			return nil
		}
	}
	return err
}
