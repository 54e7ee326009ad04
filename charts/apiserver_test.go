package charts_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/quotagate/quotagate/internal/testbed"
	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/test/localcluster"
	"github.com/quotagate/quotagate/tools/chartrender"
)

// warnings collects the warnings the API server sends back (Pod Security, unknown fields).
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// The chart, rendered for a non-default release with its defaults on a cluster without
// cert-manager, its cert-manager objects once cert-manager's CRDs are there, and
// config/default are accepted by a real kube-apiserver v1.37.2 with strict field validation and no Pod Security warning for the
// restricted profile; the gate guard the chart installs lets exactly the release's manager
// (and the extra users) remove the gate.
func TestChartOnRealAPIServer(t *testing.T) {
	const release, namespace = "acme", "acme-system"
	ctx := t.Context()
	cluster := localcluster.StartForTest(t, localcluster.Options{Nodes: 1})
	warn := &warnings{}
	cfg := cluster.Config()
	cfg.WarningHandler = warn
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))

	create := func(objs ...*unstructured.Unstructured) {
		t.Helper()
		for _, o := range objs {
			gvk := o.GroupVersionKind()
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Fatalf("%s %s: %v", gvk.Kind, o.GetName(), err)
			}
			var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
			if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
				ri = dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
			}
			if _, err := ri.Create(ctx, o, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
				t.Fatalf("creating %s %s: %v", gvk.Kind, o.GetName(), err)
			}
			for _, w := range warn.take() {
				t.Errorf("creating %s %s: warning: %s", gvk.Kind, o.GetName(), w)
			}
		}
	}
	createCRDs := func(crds []*unstructured.Unstructured) {
		t.Helper()
		create(crds...)
		for _, crd := range crds {
			waitEstablished(t, dyn, crd.GetName())
		}
		mapper.Reset()
	}

	// No cert-manager: the default install needs none. The release namespace warns about anything the restricted profile would refuse.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: namespace, Labels: map[string]string{"pod-security.kubernetes.io/warn": "restricted"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	m := mustInstall(t, release, namespace, map[string]any{"guard": map[string]any{"extraAllowedUsers": []any{"alice"}}})
	var crds, others []*unstructured.Unstructured
	for _, o := range append(m.Objects, m.Hooks...) {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		} else {
			others = append(others, o)
		}
	}
	createCRDs(crds)
	create(others...)

	// With cert-manager's CRDs, the cert-manager choice's Issuers and Certificates for the
	// same release are accepted by their schemas.
	createCRDs(certManagerCRDs(t))
	withCM := mustInstall(t, release, namespace, map[string]any{"certManager": map[string]any{"enabled": true}})
	var cmObjects []*unstructured.Unstructured
	for _, o := range withCM.Objects {
		if strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/") {
			cmObjects = append(cmObjects, o)
		}
	}
	if len(cmObjects) == 0 {
		t.Fatal("certManager.enabled=true renders no cert-manager object")
	}
	create(cmObjects...)

	// The gate guard, on pods of a namespace that is not opted in (the webhook is not
	// running here; the test puts the gate on the pods itself).
	const podNS = "team-a"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grantPodPatch(ctx, t, cs, podNS,
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "intruder", Namespace: podNS},
		rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"})

	intruder, err := cluster.ServiceAccountConfig(ctx, podNS, "intruder", 0)
	if err != nil {
		t.Fatal(err)
	}
	manager, err := cluster.ServiceAccountConfig(ctx, namespace, release+"-quotagate-manager", 0)
	if err != nil {
		t.Fatal(err)
	}
	alice := cluster.Config()
	alice.Impersonate = rest.ImpersonationConfig{UserName: "alice"}

	// The policy takes effect once the API server has loaded it: until the intruder is
	// refused by it (and not, say, by RBAC), try again on a new gated pod.
	var lastErr error
	attempt := 0
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		attempt++
		pod := fmt.Sprintf("probe-%d", attempt)
		createGatedPod(ctx, t, cs, podNS, pod)
		lastErr = removeGate(ctx, intruder, podNS, pod)
		return lastErr != nil && apierrors.IsForbidden(lastErr) && strings.Contains(lastErr.Error(), "may only be removed by"), nil
	})
	if err != nil {
		t.Fatalf("the gate guard never refused the intruder: %v (last answer: %v)", err, lastErr)
	}
	createGatedPod(ctx, t, cs, podNS, "p1")
	if err := removeGate(ctx, intruder, podNS, "p1"); err == nil {
		t.Error("the intruder removed the gate once the policy was in force")
	}
	want := "system:serviceaccount:acme-system:acme-quotagate-manager, alice, not by system:serviceaccount:team-a:intruder"
	if !strings.Contains(lastErr.Error(), want) {
		t.Errorf("denial %q does not name who may remove the gate (%q)", lastErr, want)
	}
	if err := removeGate(ctx, manager, podNS, "p1"); err != nil {
		t.Errorf("the release's manager could not remove the gate: %v", err)
	}
	createGatedPod(ctx, t, cs, podNS, "p2")
	if err := removeGate(ctx, alice, podNS, "p2"); err != nil {
		t.Errorf("extra allowed user alice could not remove the gate: %v", err)
	}

	// config/default, the install without Helm, is accepted too (its CRDs are the chart's).
	// It comes last: its gate guard allows only quotagate-system's manager. Its APIService
	// is left out: the visibility API's name is its version and group, one per cluster,
	// and the release registered it already.
	for _, o := range kustomizeBuild(t, "config/default").Objects {
		if o.GetKind() != "CustomResourceDefinition" && o.GetKind() != "APIService" {
			create(o)
		}
	}

	// The uninstall hook's RBAC (created here with the rest), on the real authorizer: the
	// identity the hook runs as may delete the release's webhook configuration, and
	// neither read nor delete anyone else's (here config/default's). (It reads its own:
	// the certificate rotator injects its caBundle.)
	hooks := kubernetes.NewForConfigOrDie(manager).AdmissionregistrationV1().MutatingWebhookConfigurations()
	if err := hooks.Delete(ctx, "quotagate-webhook", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the release's manager deleting another webhook configuration: %v, want forbidden", err)
	}
	if _, err := hooks.Get(ctx, "quotagate-webhook", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the release's manager reading another webhook configuration: %v, want forbidden", err)
	}
	if err := hooks.Delete(ctx, release+"-quotagate-webhook", metav1.DeleteOptions{}); err != nil {
		t.Errorf("the release's manager could not delete its webhook configuration: %v", err)
	}
}

func certManagerCRDs(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager").Output()
	if err != nil {
		t.Fatalf("locating the cert-manager module: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds")
	var crds []*unstructured.Unstructured
	for _, name := range []string{"cert-manager.io_certificates.yaml", "cert-manager.io_issuers.yaml", "cert-manager.io_clusterissuers.yaml", "cert-manager.io_certificaterequests.yaml"} {
		b := readAbs(t, filepath.Join(dir, name))
		objs, err := chartrender.DecodeAll(string(b))
		if err != nil {
			t.Fatalf("decoding %s: %v", name, err)
		}
		crds = append(crds, objs...)
	}
	return crds
}

func waitEstablished(t *testing.T, dyn dynamic.Interface, name string) {
	t.Helper()
	gvr := apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
	testbed.Poll(t, 30*time.Second, "CRD "+name+" to be established", func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := kruntimeFromUnstructured(u, &crd); err != nil {
			return false, err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

func grantPodPatch(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, subjects ...rbacv1.Subject) {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-patcher", Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "patch"}}},
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-patcher", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   subjects,
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createGatedPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	pod := podtest.New(name).NS(ns).Gates(gate).Container("c", "busybox").Obj()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// removeGate sends the manager's patch: test the gate's name at its index, then remove it.
func removeGate(ctx context.Context, cfg *rest.Config, ns, name string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`[{"op":"test","path":"/spec/schedulingGates/0/name","value":%q},{"op":"remove","path":"/spec/schedulingGates/0"}]`, gate)
	_, err = cs.CoreV1().Pods(ns).Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	return err
}
