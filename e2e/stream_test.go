//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
)

// streamNS is an opted-in namespace whose one Budget (churnBudget) has room for every
// pod: the webhook gates its pods and the manager admits them at once. The certificate
// renewal and the uninstall steps create pods there all the time, as a cluster's
// controllers would. (An opted-in namespace with no budget would hold them: uncovered
// pods wait by default.)
const streamNS = "churn"

// churnBudget is a Budget that covers every pod of namespace and limits nothing a pod
// stream reaches.
func churnBudget(namespace string) *v1alpha1.Budget {
	return budget(namespace, "churn", v1alpha1.StateOpen, corev1.ResourceList{
		corev1.ResourcePods: *resource.NewQuantity(100000, resource.DecimalSI),
	})
}

// streamPause paces a podStream: enough creates to straddle every step of a renewal
// or an uninstall, few enough to leave the machine's two cores to the control plane.
const streamPause = 50 * time.Millisecond

// podStream creates pods in a namespace one after another until stopped, and records
// what each create returned.
type podStream struct {
	stop, done chan struct{}
	stopOnce   sync.Once

	mu       sync.Mutex
	created  int
	gated    []string // pods the API server returned with the quotagate gate
	ungated  int      // pods created without it (the webhook was not called)
	failures []streamFailure
}

// streamFailure is a create that failed, and when its error came back.
type streamFailure struct {
	err error
	at  time.Time
}

func startPodStream(ctx context.Context, cs kubernetes.Interface, namespace, prefix string) *podStream {
	s := &podStream{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for n := 0; ; n++ {
			pod, err := cs.CoreV1().Pods(namespace).Create(ctx, streamPod(namespace, fmt.Sprintf("%s-%d", prefix, n)), metav1.CreateOptions{})
			s.mu.Lock()
			switch {
			case err != nil:
				now := time.Now()
				s.failures = append(s.failures, streamFailure{fmt.Errorf("creating pod %s-%d at %s: %w", prefix, n, now.Format(time.StampMilli), err), now})
			case hasGate(pod):
				s.created++
				s.gated = append(s.gated, pod.Name)
			default:
				s.created++
				s.ungated++
			}
			s.mu.Unlock()
			t := time.NewTimer(streamPause)
			select {
			case <-s.stop:
				t.Stop()
				return
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop stops the stream and waits for its last create; it may be called again.
func (s *podStream) Stop() {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
}

// counts returns how many pods were created, how many came back gated, and the errors.
func (s *podStream) counts() (created, gated, ungated int, failures []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.failures {
		failures = append(failures, f.err)
	}
	return s.created, len(s.gated), s.ungated, failures
}

// checkAllGated reports every create of the stream that failed, and any pod it created
// without the gate (neither the webhook nor the admission policy added it), during what
// ("the renewals", ...).
func (s *podStream) checkAllGated(t *testing.T, what string) {
	t.Helper()
	s.checkAllGatedBut(t, what, nil)
}

// checkAllGatedBut is checkAllGated but for the failures excuse explains: those it
// returns a reason for are logged with it, not reported.
func (s *podStream) checkAllGatedBut(t *testing.T, what string, excuse func(at time.Time, err error) string) {
	t.Helper()
	s.mu.Lock()
	created, gated, ungated, failures := s.created, len(s.gated), s.ungated, slices.Clone(s.failures)
	s.mu.Unlock()
	t.Logf("%d pods created during %s, %d came back gated, %d failed", created, what, gated, len(failures))
	for _, f := range failures {
		if excuse != nil {
			if why := excuse(f.at, f.err); why != "" {
				t.Logf("A create failed during %s: %v; %s", what, f.err, why)
				continue
			}
		}
		t.Errorf("a create failed during %s: %v", what, f.err)
	}
	if ungated != 0 {
		t.Errorf("%d pods were created without the gate during %s: no admission step added it", ungated, what)
	}
}

// streamPod is a small bare pod that kwok runs for a second.
func streamPod(namespace, name string) *corev1.Pod {
	return podtest.New(name).NS(namespace).Label("app", "churn").
		Annotation("pod-complete.stage.kwok.x-k8s.io/delay", "1s").
		Annotation("pod-complete.stage.kwok.x-k8s.io/jitter-delay", "1s").
		RestartPolicy(corev1.RestartPolicyNever).Container("work", "registry.example/churn:1.0").Req("cpu=1m,memory=1Mi").
		Obj()
}

// servedCert is the certificate the webhook presents at addr, verified against caBundle
// as the API server verifies it.
func servedCert(ctx context.Context, addr string, caBundle []byte) (*x509.Certificate, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caBundle) {
		return nil, errors.New("the caBundle holds no certificate")
	}
	d := tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return conn.(*tls.Conn).ConnectionState().PeerCertificates[0], nil
}
