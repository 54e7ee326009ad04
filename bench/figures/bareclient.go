package figures

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/gates"
)

// bareUngate is the baseline releaser: it removes gate from every pod given with the
// same JSON patch the manager sends (test and remove the gate, set the admitted-at and
// admitted-by annotations), workers at a time, with no client-side rate limit. It is
// what the API server can take, with no accounting, events or status in the way.
func bareUngate(ctx context.Context, c kubernetes.Interface, pods []corev1.Pod, gate string, workers int) error {
	next := make(chan *corev1.Pod)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range workers {
		wg.Go(func() {
			for pod := range next {
				if err := bareUngateOne(ctx, c, pod, gate); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range pods {
		next <- &pods[i]
	}
	close(next)
	wg.Wait()
	return first
}

func bareUngateOne(ctx context.Context, c kubernetes.Interface, pod *corev1.Pod, gate string) error {
	patch, ok := gates.UngatePatch(pod, gate, map[string]string{
		v1alpha1.AdmittedAtAnnotation: time.Now().UTC().Format(time.RFC3339),
		v1alpha1.AdmittedByAnnotation: pod.Namespace + "/budget",
	})
	if !ok {
		return fmt.Errorf("pod %s/%s does not carry %s", pod.Namespace, pod.Name, gate)
	}
	if _, err := c.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("ungating %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// listGated lists the pods of ns, for the bare client to release. It runs before the
// clock starts, as the manager's cache is warm before its clock starts.
func listGated(ctx context.Context, c kubernetes.Interface, ns string, want int) ([]corev1.Pod, error) {
	l, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", ns, err)
	}
	if len(l.Items) != want {
		return nil, fmt.Errorf("listed %d pods in %s, want %d", len(l.Items), ns, want)
	}
	return l.Items, nil
}
