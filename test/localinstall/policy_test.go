package localinstall

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestAdmissionModeOf(t *testing.T) {
	obj := func(apiVersion, kind string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetName("quotagate-x")
		return u
	}
	tests := map[string]struct {
		objs []*unstructured.Unstructured
		want string
	}{
		"the gate policy": {objs: []*unstructured.Unstructured{
			obj("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy"),
			obj("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
		}, want: AdmissionPolicy},
		"the webhook": {objs: []*unstructured.Unstructured{
			obj("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
			obj("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
		}, want: AdmissionWebhook},
		"both, switching from the webhook to the policy": {objs: []*unstructured.Unstructured{
			obj("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
			obj("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy"),
		}, want: AdmissionSwitching},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := admissionModeOf(tc.objs); got != tc.want {
				t.Errorf("admissionModeOf() = %q, want %q", got, tc.want)
			}
		})
	}
	if !clusterScoped("MutatingAdmissionPolicyBinding") || !clusterScoped("MutatingAdmissionPolicy") {
		t.Error("the gate policy's kinds are not cluster-scoped")
	}
}
