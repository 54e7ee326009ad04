package app

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// explanationGroupVersion is the apiVersion of why's -o json|yaml output: a
// client-side kind, as kubectl's Config is, that no API serves.
var explanationGroupVersion = schema.GroupVersion{Group: "cli.quotagate.io", Version: "v1alpha1"}

// kindPodExplanation is the kind of why's -o json|yaml output.
const kindPodExplanation = "PodExplanation"

// PodExplanation is why's answer as an object cli-runtime's printers can print: the
// whyResult's fields (pod, state, summary, reason, budgets, created, admittedAt,
// admittedBy, notes) with apiVersion and kind.
type PodExplanation struct {
	metav1.TypeMeta `json:",inline"`
	whyResult
}

var _ runtime.Object = (*PodExplanation)(nil)

func newPodExplanation(r *whyResult) *PodExplanation {
	return &PodExplanation{
		TypeMeta:  metav1.TypeMeta{APIVersion: explanationGroupVersion.String(), Kind: kindPodExplanation},
		whyResult: copyWhyResult(*r),
	}
}

// DeepCopyObject implements runtime.Object.
func (p *PodExplanation) DeepCopyObject() runtime.Object {
	return &PodExplanation{TypeMeta: p.TypeMeta, whyResult: copyWhyResult(p.whyResult)}
}

// copyWhyResult copies r and what its pointers and slices hold.
func copyWhyResult(r whyResult) whyResult {
	if r.Reason != nil {
		reason := *r.Reason
		r.Reason = &reason
	}
	if r.AdmittedAt != nil {
		at := *r.AdmittedAt
		r.AdmittedAt = &at
	}
	r.AdmittedBy = slices.Clone(r.AdmittedBy)
	r.Notes = slices.Clone(r.Notes)
	r.Budgets = slices.Clone(r.Budgets)
	for i := range r.Budgets {
		e := &r.Budgets[i].entry
		e.Requests = e.Requests.DeepCopy()
		if e.RetryAt != nil {
			at := *e.RetryAt
			e.RetryAt = &at
		}
	}
	return r
}
