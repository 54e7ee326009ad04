package figures

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// gatePolicy is the shipped gate policy (config/policy/admission/gate_policy.yaml): the
// MutatingAdmissionPolicy that adds the gate, the bound-pod guard, and their bindings.
type gatePolicy struct {
	mutation        admissionregistrationv1.MutatingAdmissionPolicy
	mutationBinding admissionregistrationv1.MutatingAdmissionPolicyBinding
	guard           admissionregistrationv1.ValidatingAdmissionPolicy
	guardBinding    admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// readGatePolicy reads the shipped gate policy from the repository at root; each of its
// four objects must be there once.
func readGatePolicy(root string) (gatePolicy, error) {
	var p gatePolicy
	path := filepath.Join(root, "config", "policy", "admission", "gate_policy.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return p, err
	}
	seen := map[string]int{}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return p, fmt.Errorf("reading %s: %w", path, err)
		}
		var into any
		switch meta.Kind {
		case "MutatingAdmissionPolicy":
			into = &p.mutation
		case "MutatingAdmissionPolicyBinding":
			into = &p.mutationBinding
		case "ValidatingAdmissionPolicy":
			into = &p.guard
		case "ValidatingAdmissionPolicyBinding":
			into = &p.guardBinding
		default:
			return p, fmt.Errorf("%s holds an unexpected %q", path, meta.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			return p, fmt.Errorf("reading the %s in %s: %w", meta.Kind, path, err)
		}
		seen[meta.Kind]++
	}
	for _, kind := range []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if seen[kind] != 1 {
			return p, fmt.Errorf("%s holds %d of %s, want 1", path, seen[kind], kind)
		}
	}
	if p.mutationBinding.Spec.MatchResources == nil || p.guardBinding.Spec.MatchResources == nil {
		return p, fmt.Errorf("%s: both bindings need matchResources (the opted-in namespaces)", path)
	}
	return p, nil
}

// registerPolicy creates the shipped gate policy (readGatePolicy), as the chart does in
// admission.mode policy, with both bindings narrowed to ns (onlyNamespace), and waits
// until a dry-run create in ns comes back gated. The returned func deletes it and waits
// until creates come back ungated.
func (e *Env) registerPolicy(ctx context.Context, ns string) (func(context.Context) error, error) {
	p, err := readGatePolicy(e.root)
	if err != nil {
		return nil, err
	}
	mb, gb := p.mutationBinding.Spec.MatchResources, p.guardBinding.Spec.MatchResources
	mb.NamespaceSelector = onlyNamespace(mb.NamespaceSelector, ns)
	gb.NamespaceSelector = onlyNamespace(gb.NamespaceSelector, ns)
	return e.registerGating(ctx, ns, &p.mutation, &p.mutationBinding, &p.guard, &p.guardBinding)
}

// registerGateOnly creates the API server's floor for any policy that gates pods
// (gateOnly) for ns. Figure 3 measures it beside the shipped policy, so the run shows
// which part of the policy's cost is the API server's for adding a gate at all. The
// returned func deletes it and waits until creates in ns come back ungated.
func (e *Env) registerGateOnly(ctx context.Context, ns string) (func(context.Context) error, error) {
	p, err := readGatePolicy(e.root)
	if err != nil {
		return nil, err
	}
	m, b := gateOnly(p, ns)
	return e.registerGating(ctx, ns, m, b)
}

// gateOnly is the shipped policy's mutation alone, with none of its match conditions, no
// bound-pod guard and no reinvocation, under a name of its own, and a binding to ns by
// name.
func gateOnly(p gatePolicy, ns string) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	m := p.mutation.DeepCopy()
	m.Name += "-gate-only"
	m.Spec.MatchConditions = nil
	// Without not-gated-yet, the API server's reinvocation (which its own patch asks
	// for) would add a second copy of the gate.
	m.Spec.ReinvocationPolicy = admissionregistrationv1.NeverReinvocationPolicy
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: m.Name,
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			},
		},
	}
	return m, b
}

// registerGating creates objs (admission policies and their bindings), then waits until
// a dry-run create in ns comes back gated. The returned func deletes them and waits until
// creates in ns come back ungated.
func (e *Env) registerGating(ctx context.Context, ns string, objs ...metav1.Object) (func(context.Context) error, error) {
	api := e.Client.AdmissionregistrationV1()
	var deletes []func(context.Context) error
	unregister := func(ctx context.Context) error {
		for _, del := range deletes {
			if err := del(ctx); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("unregistering an admission policy: %w", err)
			}
		}
		return e.waitWebhookCalled(ctx, ns, false)
	}
	for _, o := range objs {
		var err error
		name := o.GetName()
		switch o := o.(type) {
		case *admissionregistrationv1.MutatingAdmissionPolicy:
			_, err = api.MutatingAdmissionPolicies().Create(ctx, o, metav1.CreateOptions{})
			deletes = append(deletes, func(ctx context.Context) error {
				return api.MutatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
			})
		case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
			_, err = api.MutatingAdmissionPolicyBindings().Create(ctx, o, metav1.CreateOptions{})
			deletes = append(deletes, func(ctx context.Context) error {
				return api.MutatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
			})
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			_, err = api.ValidatingAdmissionPolicies().Create(ctx, o, metav1.CreateOptions{})
			deletes = append(deletes, func(ctx context.Context) error {
				return api.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
			})
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			_, err = api.ValidatingAdmissionPolicyBindings().Create(ctx, o, metav1.CreateOptions{})
			deletes = append(deletes, func(ctx context.Context) error {
				return api.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
			})
		default:
			err = fmt.Errorf("not an admission policy or binding: %T", o)
		}
		if err != nil {
			_ = unregister(ctx)
			return nil, fmt.Errorf("registering %s: %w", name, err)
		}
	}
	if err := e.waitWebhookCalled(ctx, ns, true); err != nil {
		_ = unregister(ctx)
		return nil, err
	}
	return unregister, nil
}
