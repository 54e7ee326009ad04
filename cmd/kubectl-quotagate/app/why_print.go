package app

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// cliGroupVersion is the apiVersion of why's and usage's -o json|yaml output:
// client-side kinds, as kubectl's Config is, that no API serves.
var cliGroupVersion = schema.GroupVersion{Group: "cli.quotagate.io", Version: "v1alpha1"}

// kindPodExplanation is the kind of why's -o json|yaml output.
const kindPodExplanation = "PodExplanation"

// PodExplanation is why's answer as an object cli-runtime's printers can print: the
// whyResult's fields (pod, state, summary, reason, budgets, created, admittedAt,
// admittedBy, windows, notes) with apiVersion and kind.
type PodExplanation struct {
	metav1.TypeMeta `json:",inline"`
	whyResult
}

var _ runtime.Object = (*PodExplanation)(nil)

func newPodExplanation(r *whyResult) *PodExplanation {
	return &PodExplanation{
		TypeMeta:  metav1.TypeMeta{APIVersion: cliGroupVersion.String(), Kind: kindPodExplanation},
		whyResult: *r,
	}
}

// DeepCopyObject implements runtime.Object.
func (p *PodExplanation) DeepCopyObject() runtime.Object { return jsonCopy(p) }

// jsonCopy copies a client-side object through JSON, so the copy holds what the object
// prints (every exported field, whatever fields it gains) and nothing that it does not
// print.
func jsonCopy[T any](in *T) *T {
	raw, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("copying a %T: %v", in, err))
	}
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(fmt.Sprintf("copying a %T: %v", in, err))
	}
	return &out
}

// kindBudgetUsage is the kind of usage's -o json|yaml output.
const kindBudgetUsage = "BudgetUsage"

// BudgetUsage is usage's answer as an object cli-runtime's printers can print: the
// budget, its hard, its status.used, the pods charged to it with what each is charged,
// their total, and the notes.
type BudgetUsage struct {
	metav1.TypeMeta `json:",inline"`
	budgetUsage
}

var _ runtime.Object = (*BudgetUsage)(nil)

func newBudgetUsageObject(u *budgetUsage) *BudgetUsage {
	return &BudgetUsage{
		TypeMeta:    metav1.TypeMeta{APIVersion: cliGroupVersion.String(), Kind: kindBudgetUsage},
		budgetUsage: *u,
	}
}

// DeepCopyObject implements runtime.Object.
func (u *BudgetUsage) DeepCopyObject() runtime.Object { return jsonCopy(u) }
