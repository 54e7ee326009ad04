package localinstall

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/gates"
)

// The chart's admission modes (admission.mode; auto resolves to one of them).
const (
	AdmissionPolicy  = "policy"
	AdmissionWebhook = "webhook"
	// AdmissionSwitching is both, for the one revision that moves a release from the
	// webhook to the policy (charts/quotagate/templates/_admission.tpl).
	AdmissionSwitching = "switching"
)

// admissionModeOf is the admission step a release runs: policy when it holds the gate
// policy (a MutatingAdmissionPolicy), webhook when it holds the webhook's
// configuration, switching when it holds both.
func admissionModeOf(objs []*unstructured.Unstructured) string {
	_, policyErr := find(objs, "admissionregistration.k8s.io", "MutatingAdmissionPolicy")
	_, webhookErr := find(objs, "admissionregistration.k8s.io", "MutatingWebhookConfiguration")
	switch {
	case policyErr == nil && webhookErr == nil:
		return AdmissionSwitching
	case policyErr == nil:
		return AdmissionPolicy
	}
	return AdmissionWebhook
}

// AdmissionMode is the admission step the installed release runs, as the chart chose
// it: AdmissionPolicy, AdmissionWebhook or AdmissionSwitching.
func (i *Installation) AdmissionMode() string { return i.mode }

// waitPolicyApplied waits until a dry-run pod create in an opted-in namespace comes back
// gated: the API server loads policies from its informer, a moment after they exist.
// The namespace is made for the probe and deleted.
func (i *Installation) waitPolicyApplied(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "quotagate-policy-probe-", Labels: map[string]string{v1alpha1.EnabledLabel: "true"},
	}}
	ns, err := i.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the namespace to probe the gate policy: %w", err)
	}
	defer func() {
		_ = i.client.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns.Name, metav1.DeleteOptions{})
	}()
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, i.opts.Timeout, true, func(ctx context.Context) (bool, error) {
		pod, err := i.client.CoreV1().Pods(ns.Name).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if last = err; err != nil {
			return false, nil // the namespace's default ServiceAccount may not exist yet
		}
		return gates.HasGate(pod, v1alpha1.SchedulingGate), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the API server to apply the gate policy (last create: %v): %w", last, err)
	}
	return nil
}
