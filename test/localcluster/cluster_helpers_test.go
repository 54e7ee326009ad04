package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// createNamespace creates a namespace with a generated name and returns the name.
func createNamespace(t *testing.T, client kubernetes.Interface, prefix string) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Creating namespace: %v", err)
	}
	return ns.Name
}

// waitForPod polls a pod until done holds and returns it.
func waitForPod(t *testing.T, client kubernetes.Interface, ns, name, what string, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return done(p), nil
	})
	if err != nil {
		t.Fatalf("Waiting for pod %s/%s to be %s: %v; last seen: phase %s, conditions %+v", ns, name, what, err, pod.Status.Phase, pod.Status.Conditions)
	}
	return pod
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	i := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == t })
	if i < 0 {
		return nil
	}
	return &p.Status.Conditions[i]
}

// processesUsing lists the running processes whose command line mentions dir: every
// process of a cluster names a file in its directory.
func processesUsing(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("Reading /proc: %v", err)
	}
	var found []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), dir) {
			continue
		}
		// A zombie has an empty cmdline; anything listed here is alive.
		found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return found
}
