package visibility

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/pkg/estimate"
	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/test/localcluster"
)

// heldOnce holds the first what-if of its namespace until that request ends, as a
// long simulation would run, and answers every other with next.
type heldOnce struct {
	namespace string
	next      Simulator
	held      atomic.Bool
	started   chan struct{}
	ended     chan error // context.Cause of the held simulation's end
}

func (h *heldOnce) SimulatePods(ctx context.Context, namespace string, tmpl *corev1.PodTemplateSpec, count int) (estimate.WhatIf, error) {
	if namespace != h.namespace || h.held.Swap(true) {
		return h.next.SimulatePods(ctx, namespace, tmpl, count)
	}
	close(h.started)
	<-ctx.Done()
	h.ended <- context.Cause(ctx)
	return estimate.WhatIf{}, context.Cause(ctx)
}

// rawPost posts body as the user of cs's config through kube-apiserver, with no retry
// (client-go retries a 429 by itself), and returns the status code, the Retry-After
// header and the Status message.
func rawPost(ctx context.Context, t *testing.T, cfg *rest.Config, namespace string, body any) (code int, retryAfter, message string) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.Host+PodSimulationsPath(namespace), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var st metav1.Status
	_ = json.Unmarshal(raw, &st)
	return resp.StatusCode, resp.Header.Get("Retry-After"), st.Message
}

// TestTenantWhatIfsAreBounded: the hostile tenant's what-ifs through a real
// kube-apiserver's aggregation layer, as users with nothing but the built-in edit role
// in their namespaces, under the manager's default limits. A what-if beyond a size
// (1000 pods of 9000 containers, 1001 pods, a body over half a MB) is refused at once
// with the limit and its flag named. While team-a's what-if runs, team-a's second one
// is answered 429 with Retry-After, and team-b's is answered in full. When team-a's
// client goes away, its simulation stops (its context ends through kube-apiserver),
// and team-a's next what-if is answered.
func TestTenantWhatIfsAreBounded(t *testing.T) {
	dir := t.TempDir()
	cluster := localcluster.StartForTest(t, localcluster.Options{Nodes: 1})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	now := time.Now()
	sim := &heldOnce{namespace: "team-a", next: worldSimulator{now: now, world: tenantWorld(now)}, started: make(chan struct{}), ended: make(chan error, 1)}
	port := testbed.FreePort(t)
	srv, err := New(Options{BindAddress: net.IPv4(127, 0, 0, 1), Port: port, CertDir: filepath.Join(dir, "certs"), Kubeconfig: cluster.KubeconfigPath(),
		Simulator: sim}, quota.NewAdmissionQueue().Reader(), leading(true), nil)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := servingCert(t, dir)
	go func() { _ = srv.Start(ctx) }()
	cfg := cluster.Config()
	register(ctx, t, cfg, port, caPEM)
	admin := kubernetes.NewForConfigOrDie(cfg)
	roles(ctx, t, admin)
	editors := map[string]*rest.Config{}
	for _, ns := range []string{"team-a", "team-b"} {
		bind := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "editor-edit"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "editor"}},
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, bind, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		c := rest.CopyConfig(cfg)
		c.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":editor",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
		editors[ns] = c
	}
	editorA, editorB := kubernetes.NewForConfigOrDie(editors["team-a"]), kubernetes.NewForConfigOrDie(editors["team-b"])
	// kube-controller-manager aggregates the pod-simulator role into edit shortly after
	// it is created; until then the editors are refused.
	testbed.Poll(t, 30*time.Second, "team-b's editor may simulate pods", func(ctx context.Context) (bool, error) {
		_, err := postSimulation(ctx, editorB, "team-b", simulation(1))
		return err == nil, nil
	})

	t.Run("oversize what-ifs are refused with the limit named", func(t *testing.T) {
		attack := simulation(1000)
		for i := 1; i < 9000; i++ {
			attack.Spec.Template.Spec.Containers = append(attack.Spec.Template.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i)})
		}
		huge := simulation(1)
		huge.Spec.Template.Annotations["padding"] = strings.Repeat("x", DefaultSimulationMaxBodyBytes)
		for what, tc := range map[string]struct {
			body    *visv1.PodSimulation
			check   func(error) bool
			message string
		}{
			"1000 pods of 9000 containers": {body: attack, check: apierrors.IsInvalid,
				message: "a simulation of 1000 pods of 9000 containers each (9000000 containers) exceeds the limit of 10000 containers (--simulation-max-containers)"},
			"1001 pods": {body: simulation(1001), check: apierrors.IsInvalid,
				message: "a simulation of 1001 pods exceeds the limit of 1000 pods (--simulation-max-pods)"},
			"a body over half a MB": {body: huge, check: apierrors.IsRequestEntityTooLargeError,
				message: "exceeds the limit of 524288 bytes (--simulation-max-body-bytes)"},
		} {
			_, err := postSimulation(ctx, editorA, "team-a", tc.body)
			if !tc.check(err) || !strings.Contains(fmt.Sprint(err), tc.message) {
				t.Errorf("%s: got %v, want the status code and %q", what, err, tc.message)
			}
		}
		select {
		case <-sim.started:
			t.Fatalf("an oversize what-if reached the simulator")
		default:
		}
	})

	t.Run("one tenant's what-if never waits on another's", func(t *testing.T) {
		clientA, leave := context.WithCancel(ctx)
		defer leave()
		runningA := make(chan error, 1)
		go func() {
			_, err := postSimulation(clientA, editorA, "team-a", simulation(2))
			runningA <- err
		}()
		select {
		case <-sim.started:
		case <-time.After(time.Minute):
			t.Fatal("team-a's what-if never started")
		}

		code, retryAfter, message := rawPost(ctx, t, editors["team-a"], "team-a", simulation(1))
		if code != http.StatusTooManyRequests || retryAfter != "1" || !strings.Contains(message, "a pod simulation of namespace team-a is running") {
			t.Errorf("team-a's second what-if while its first runs: %d, Retry-After %q, %q; want 429, Retry-After 1 and why", code, retryAfter, message)
		}

		body, err := postSimulation(ctx, editorB, "team-b", simulation(2))
		var answer visv1.PodSimulation
		if err == nil {
			err = json.Unmarshal(body, &answer)
		}
		if err != nil || len(answer.Status.Pods) != 2 || answer.Status.Pods[1].EstimatedStart == nil {
			t.Errorf("team-b's what-if while team-a's runs: %v, %s; want both pods placed and estimated", err, body)
		}

		leave()
		select {
		case cause := <-sim.ended:
			if !errors.Is(cause, context.Canceled) {
				t.Errorf("team-a's simulation ended with %v, want it stopped because its client went away", cause)
			}
		case <-time.After(time.Minute):
			t.Fatal("team-a's simulation went on after its client went away")
		}
		if err := <-runningA; err == nil {
			t.Errorf("team-a's abandoned what-if answered")
		}

		// Its slot is free: team-a's next what-if is answered (the slot is given back
		// once the simulation has returned, a moment after it stopped).
		testbed.Poll(t, 30*time.Second, "team-a's next what-if answered", func(ctx context.Context) (bool, error) {
			code, _, message := rawPost(ctx, t, editors["team-a"], "team-a", simulation(1))
			if code != http.StatusCreated && code != http.StatusTooManyRequests {
				return false, fmt.Errorf("team-a's next what-if: %d %s", code, message)
			}
			return code == http.StatusCreated, nil
		})
	})
}
