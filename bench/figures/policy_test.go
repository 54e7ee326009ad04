package figures

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/quotagate/quotagate/bench/report"
)

func TestGateOnlyIsTheShippedMutationAlone(t *testing.T) {
	root, _, err := report.RepoPaths()
	if err != nil {
		t.Fatal(err)
	}
	p, err := readGatePolicy(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.mutation.Spec.MatchConditions) == 0 || len(p.mutation.Spec.Mutations) != 1 {
		t.Fatalf("the shipped policy has %d match conditions and %d mutations, want some and 1",
			len(p.mutation.Spec.MatchConditions), len(p.mutation.Spec.Mutations))
	}
	m, b := gateOnly(p, "ns-1")
	if m.Name == p.mutation.Name || b.Spec.PolicyName != m.Name {
		t.Errorf("floor policy %q bound by %q: want a name of its own, bound by its binding", m.Name, b.Spec.PolicyName)
	}
	if len(m.Spec.MatchConditions) != 0 || m.Spec.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy {
		t.Errorf("floor policy: %d match conditions, reinvocation %q; want none and Never", len(m.Spec.MatchConditions), m.Spec.ReinvocationPolicy)
	}
	if m.Spec.Mutations[0].JSONPatch.Expression != p.mutation.Spec.Mutations[0].JSONPatch.Expression {
		t.Errorf("floor mutation %q, want the shipped one", m.Spec.Mutations[0].JSONPatch.Expression)
	}
	if sel := b.Spec.MatchResources.NamespaceSelector; sel == nil || len(sel.MatchLabels) != 1 || sel.MatchLabels[corev1.LabelMetadataName] != "ns-1" {
		t.Errorf("floor binding selector %v, want the namespace ns-1 by name only", sel)
	}
	// The shipped policy it was made from is unchanged.
	if len(p.mutation.Spec.MatchConditions) == 0 || p.mutation.Spec.ReinvocationPolicy == admissionregistrationv1.NeverReinvocationPolicy {
		t.Errorf("gateOnly changed the shipped policy it was given")
	}
}
