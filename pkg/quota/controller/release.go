package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/pkg/gates"
)

// Releasing removes the gate without a quota check. It happens when a namespace opts
// out, and (through ReleaseAll) when quotagate is uninstalled: a pod must never be left
// behind a gate that nobody will remove.

func (c *Controller) queueRelease(key client.ObjectKey) {
	c.releases.Add(key)
}

func (c *Controller) requeueNamespacePods(ns string) {
	if c.reader == nil {
		return
	}
	pods := &corev1.PodList{}
	if err := c.reader.List(context.Background(), pods, client.InNamespace(ns)); err != nil {
		return
	}
	for i := range pods.Items {
		c.onPod(&pods.Items[i])
	}
}

// runReleases patches released pods, retrying failures with backoff (100 ms doubling
// to 10 s). The work queue deduplicates a pod queued twice.
func (c *Controller) runReleases(ctx context.Context) {
	logger := log.FromContext(ctx)
	go func() {
		<-ctx.Done()
		c.releases.ShutDown()
	}()
	for {
		key, quit := c.releases.Get()
		if quit {
			return
		}
		func() {
			defer c.releases.Done(key)
			if c.isOptedIn(key.Namespace) {
				c.releases.Forget(key)
				return // opted in again meanwhile: the pod waits for its budget
			}
			err := releasePod(ctx, c.reader, c.client, key, c.opts.Gate)
			if out, reason := classify(err); out == outcomeRetry {
				c.metrics.ungateErrors.WithLabelValues(reason).Inc()
				logger.Error(err, "Releasing pod failed; retrying", "pod", key)
				c.releases.AddRateLimited(key)
				return
			}
			logger.V(2).Info("Released pod of a namespace that is not opted in", "pod", key)
			c.releases.Forget(key)
		}()
	}
}

func releasePod(ctx context.Context, r client.Reader, w client.Writer, key client.ObjectKey, gate string) error {
	pod := &corev1.Pod{}
	if err := r.Get(ctx, key, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	ops := gates.RemoveOps(pod, gate)
	if ops == nil {
		return nil
	}
	patch, _ := ungatePatch(pod, gate, nil)
	return w.Patch(ctx, pod, client.RawPatch(types.JSONPatchType, patch))
}

// ReleaseAll removes the gate from every gated pod of namespace ("" for all namespaces)
// and returns how many it released. Pods that change under it are retried a few times.
func ReleaseAll(ctx context.Context, cs kubernetes.Interface, namespace, gate string) (int, error) {
	released := 0
	var errs []error
	for attempt := range 5 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
		}
		list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return released, fmt.Errorf("listing pods: %w", err)
		}
		errs = errs[:0]
		for i := range list.Items {
			pod := &list.Items[i]
			patch, ok := ungatePatch(pod, gate, nil)
			if !ok {
				continue
			}
			_, err := cs.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
			if out, _ := classify(err); out == outcomeOK || out == outcomeGone {
				if err == nil {
					released++
				}
				continue
			}
			errs = append(errs, fmt.Errorf("releasing pod %s/%s: %w", pod.Namespace, pod.Name, err))
		}
		if len(errs) == 0 {
			return released, nil
		}
	}
	return released, errors.Join(errs...)
}
