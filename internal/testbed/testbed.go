package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// InstallCRDs installs the Budget and ClusterBudget CRDs from the repository at root and
// waits until the API server serves them.
func InstallCRDs(cfg *rest.Config, root string) error {
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfPathMissing: true,
	}); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	return nil
}

// ReadClusterRole reads a ClusterRole manifest such as config/rbac/role.yaml.
func ReadClusterRole(path string) (*rbacv1.ClusterRole, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict([]byte(strings.TrimPrefix(string(raw), "---\n")), role); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return role, nil
}

// ManagerIdentity returns the objects that give the manager its identity: the namespace,
// the ServiceAccount name in it, the generated ClusterRole (config/rbac/role.yaml under
// root), and the binding between them.
func ManagerIdentity(root, namespace, name string) ([]client.Object, error) {
	role, err := ReadClusterRole(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil {
		return nil, err
	}
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}},
		role,
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
		},
	}, nil
}

// GateGuard returns the shipped gate guard (config/policy/gate_guard.yaml under root):
// the ValidatingAdmissionPolicy that lets only the manager remove the gate, and its
// binding.
func GateGuard(root string) ([]client.Object, error) {
	policy, binding := &admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := readObjects(filepath.Join(root, "config", "policy", "gate_guard.yaml"), policy, binding); err != nil {
		return nil, err
	}
	return []client.Object{policy, binding}, nil
}

// LeaderElection returns the Role and RoleBinding that let the manager elect a leader
// (config/rbac/leader_election_role.yaml under root), in quotagate-system.
func LeaderElection(root string) ([]client.Object, error) {
	role, binding := &rbacv1.Role{}, &rbacv1.RoleBinding{}
	if err := readObjects(filepath.Join(root, "config", "rbac", "leader_election_role.yaml"), role, binding); err != nil {
		return nil, err
	}
	return []client.Object{role, binding}, nil
}

// readObjects reads a multi-document manifest into objs, one document each, in order;
// unknown fields and a different number of documents are errors.
func readObjects(path string, objs ...client.Object) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var docs []string
	for _, d := range strings.Split(string(raw), "\n---\n") {
		if strings.TrimSpace(d) != "" && strings.TrimSpace(d) != "---" {
			docs = append(docs, d)
		}
	}
	if len(docs) != len(objs) {
		return fmt.Errorf("%s: %d documents, want %d", path, len(docs), len(objs))
	}
	for i, d := range docs {
		if err := yaml.UnmarshalStrict([]byte(d), objs[i]); err != nil {
			return fmt.Errorf("reading document %d of %s: %w", i+1, path, err)
		}
	}
	return nil
}
