package main

import (
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

func TestGateGuardReadsTheShippedPolicy(t *testing.T) {
	objs, err := gateGuard(filepath.Join("..", ""))
	if err != nil {
		t.Fatalf("gateGuard: %v", err)
	}
	if len(objs) != 2 {
		t.Fatalf("gateGuard returned %d objects, want the policy and its binding", len(objs))
	}
	policy, ok := objs[0].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if !ok || len(policy.Spec.Validations) == 0 {
		t.Errorf("first object %#v is not a policy with validations", objs[0])
	}
	binding, ok := objs[1].(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
	if !ok || binding.Spec.PolicyName != policy.Name {
		t.Errorf("second object %#v is not a binding of policy %s", objs[1], policy.Name)
	}
}
