package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/quotagate/quotagate/pkg/gates"
)

// ReleaseAll removes the gate from every gated pod of namespace ("" for all namespaces),
// without any quota check, and returns how many it released. Pods that change under it
// are retried a few times. It is the uninstall path: the chart's pre-delete hook runs
// `manager release --all`, so uninstalling quotagate never leaves a pod behind a gate
// that nobody will remove. (A namespace that opts out is released by the core, in Admit.)
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
			patch, ok := gates.UngatePatch(pod, gate, nil)
			if !ok {
				continue
			}
			_, err := cs.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
			if r := classify(err); r == "" || r == reasonNotFound {
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
