package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
