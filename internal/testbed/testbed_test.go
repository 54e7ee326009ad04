package testbed

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestManagerIdentityBindsTheGeneratedRole(t *testing.T) {
	root := filepath.Join("..", "..")
	objs, err := ManagerIdentity(root, "quotagate-system", "quotagate-manager")
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	var binding *rbacv1.ClusterRoleBinding
	for _, o := range objs {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			role = o
		case *rbacv1.ClusterRoleBinding:
			binding = o
		}
	}
	if role == nil || binding == nil {
		t.Fatalf("ManagerIdentity returned %d objects without a ClusterRole and its binding", len(objs))
	}
	if binding.RoleRef.Name != role.Name || binding.Subjects[0].Name != "quotagate-manager" || binding.Subjects[0].Namespace != "quotagate-system" {
		t.Errorf("binding %+v does not bind role %s to quotagate-system/quotagate-manager", binding, role.Name)
	}
	patchesPods := slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "pods") && slices.Contains(r.Verbs, "patch")
	})
	if !patchesPods {
		t.Errorf("the generated role does not allow patching pods: %+v", role.Rules)
	}
}

func TestReadClusterRoleRefusesUnknownFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "role.yaml")
	if err := writeFile(path, "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: x}\nrulez: []\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadClusterRole(path); err == nil {
		t.Errorf("a ClusterRole with an unknown field was read without error")
	}
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }

func TestGateGuardReadsTheShippedPolicy(t *testing.T) {
	objs, err := GateGuard(filepath.Join("..", ".."))
	if err != nil {
		t.Fatalf("GateGuard: %v", err)
	}
	if len(objs) != 2 {
		t.Fatalf("GateGuard returned %d objects, want the policy and its binding", len(objs))
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

func TestLeaderElectionBindsTheManager(t *testing.T) {
	objs, err := LeaderElection(filepath.Join("..", ".."))
	if err != nil {
		t.Fatalf("LeaderElection: %v", err)
	}
	role, ok := objs[0].(*rbacv1.Role)
	if !ok || !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "leases") && slices.Contains(r.Verbs, "update")
	}) {
		t.Errorf("first object %#v is not a Role that may update leases", objs[0])
	}
	binding, ok := objs[1].(*rbacv1.RoleBinding)
	if !ok || binding.RoleRef.Name != role.Name || binding.Subjects[0].Name != "quotagate-manager" {
		t.Errorf("second object %#v does not bind %s to quotagate-manager", objs[1], role.Name)
	}
}

func TestReadObjectsCountsDocuments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.yaml")
	if err := writeFile(path, "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: b}\n"); err != nil {
		t.Fatal(err)
	}
	if err := readObjects(path, &rbacv1.Role{}); err == nil {
		t.Errorf("two documents were read into one object without error")
	}
}
