package admission_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/gates"
)

// gatePolicyFile is the shipped MutatingAdmissionPolicy, its binding and the
// bound-pod guard, under config/policy.
const gatePolicyFile = "admission/gate_policy.yaml"

// The names in gatePolicyFile.
const (
	gatePolicyName    = "quotagate-gate"
	boundPodGuardName = "quotagate-bound-pod-guard"
)

// startPolicy registers the shipped MutatingAdmissionPolicy and bound-pod
// guard, and waits until the API server applies both.
func (e *env) startPolicy(t *testing.T) {
	t.Helper()
	e.applyPolicy(t, gatePolicyFile, e.withExemptDaemonSet(string(readFile(t, "../../config/policy/"+gatePolicyFile))))
	testbed.Poll(t, waitTimeout, "the API server to apply the gate policy", func(ctx context.Context) (bool, error) {
		pod, err := e.client.CoreV1().Pods(e.gated).Create(ctx, podtest.New("probe").Obj(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, nil
		}
		return gates.HasGate(pod, v1alpha1.SchedulingGate), nil
	})
	testbed.Poll(t, waitTimeout, "the API server to apply the bound-pod guard", func(ctx context.Context) (bool, error) {
		pod := podtest.New("bound-probe").Obj()
		pod.Spec.NodeName = "no-such-node"
		_, err := e.client.CoreV1().Pods(e.gated).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), boundPodGuardName), nil
	})
}

// refusalPrefix is how the API server introduces the admission step's refusal
// of a bound pod: the webhook's denial, or the bound-pod guard's.
func (e *env) refusalPrefix() string {
	if e.mode == modeWebhook {
		return `admission webhook "gate.quotagate.io" denied the request`
	}
	return "ValidatingAdmissionPolicy '" + boundPodGuardName + "' with binding '" + boundPodGuardName + "' denied request"
}

// testPolicyRemoved is mode policy's counterpart of testFailClosed: there is
// no quotagate process in the create path to fail, so the policy's only way
// out is its removal, and then pods are created ungated (docs/admission.md:
// who may delete the policy decides who may bypass the queue).
func testPolicyRemoved(t *testing.T, e *env) {
	ctx := t.Context()
	survivor, err := e.client.CoreV1().Pods(e.gated).Create(ctx, podtest.New("survivor").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	if !gates.HasGate(survivor, v1alpha1.SchedulingGate) {
		t.Fatalf("pod was not gated: %v", gateNames(survivor))
	}
	if err := e.client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Delete(ctx, gatePolicyName, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the binding: %v", err)
	}
	testbed.Poll(t, waitTimeout, "the API server to drop the gate policy", func(ctx context.Context) (bool, error) {
		pod, err := e.client.CoreV1().Pods(e.gated).Create(ctx, podtest.New("probe").Obj(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && !gates.HasGate(pod, v1alpha1.SchedulingGate), nil
	})

	t.Run("pod create in an opted-in namespace works, ungated", func(t *testing.T) {
		pod, err := e.client.CoreV1().Pods(e.gated).Create(ctx, podtest.New("ungated").Obj(), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if gates.HasGate(pod, v1alpha1.SchedulingGate) {
			t.Errorf("pod gated without the binding: %v", gateNames(pod))
		}
	})
	t.Run("pods gated before keep their gate", func(t *testing.T) {
		got, err := e.client.CoreV1().Pods(e.gated).Get(ctx, survivor.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting pod: %v", err)
		}
		if !gates.HasGate(got, v1alpha1.SchedulingGate) {
			t.Errorf("pod lost its gate: %v", gateNames(got))
		}
		if got.Status.Phase != corev1.PodPending {
			t.Errorf("phase %s, want Pending", got.Status.Phase)
		}
	})
}
