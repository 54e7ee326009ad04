package testbed

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

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
