package app

import (
	"encoding/json"
	"fmt"

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
		whyResult: *r,
	}
}

// DeepCopyObject implements runtime.Object. The copy is made through JSON, so it holds
// what the object prints (every exported field of whyResult, whatever fields it
// gains) and nothing that it does not print.
func (p *PodExplanation) DeepCopyObject() runtime.Object {
	raw, err := json.Marshal(p)
	if err != nil {
		panic(fmt.Sprintf("copying a PodExplanation: %v", err))
	}
	var out PodExplanation
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(fmt.Sprintf("copying a PodExplanation: %v", err))
	}
	return &out
}
