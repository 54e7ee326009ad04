package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// registerPolicy creates the shipped gate policy (config/policy/admission: the
// MutatingAdmissionPolicy, the bound-pod guard and their bindings), as the chart does in
// admission.mode policy, with both bindings narrowed to ns (onlyNamespace), and waits
// until a dry-run create in ns comes back gated. The returned func deletes them and
// waits until creates come back ungated.
func (e *env) registerPolicy(ctx context.Context, ns string) (func(context.Context) error, error) {
	path := filepath.Join(e.root, "config", "policy", "admission", "gate_policy.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	api := e.client.AdmissionregistrationV1()
	var deletes []func(context.Context) error
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		var name string
		switch meta.Kind {
		case "MutatingAdmissionPolicy":
			var o admissionregistrationv1.MutatingAdmissionPolicy
			if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
				_, err = api.MutatingAdmissionPolicies().Create(ctx, &o, metav1.CreateOptions{})
			}
			name = o.Name
			deletes = append(deletes, func(ctx context.Context) error {
				return api.MutatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
			})
		case "MutatingAdmissionPolicyBinding":
			var o admissionregistrationv1.MutatingAdmissionPolicyBinding
			if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
				o.Spec.MatchResources.NamespaceSelector = onlyNamespace(o.Spec.MatchResources.NamespaceSelector, ns)
				_, err = api.MutatingAdmissionPolicyBindings().Create(ctx, &o, metav1.CreateOptions{})
			}
			name = o.Name
			deletes = append(deletes, func(ctx context.Context) error {
				return api.MutatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
			})
		case "ValidatingAdmissionPolicy":
			var o admissionregistrationv1.ValidatingAdmissionPolicy
			if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
				_, err = api.ValidatingAdmissionPolicies().Create(ctx, &o, metav1.CreateOptions{})
			}
			name = o.Name
			deletes = append(deletes, func(ctx context.Context) error {
				return api.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
			})
		case "ValidatingAdmissionPolicyBinding":
			var o admissionregistrationv1.ValidatingAdmissionPolicyBinding
			if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
				o.Spec.MatchResources.NamespaceSelector = onlyNamespace(o.Spec.MatchResources.NamespaceSelector, ns)
				_, err = api.ValidatingAdmissionPolicyBindings().Create(ctx, &o, metav1.CreateOptions{})
			}
			name = o.Name
			deletes = append(deletes, func(ctx context.Context) error {
				return api.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
			})
		default:
			return nil, fmt.Errorf("%s holds an unexpected %q", path, meta.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("registering %s %s: %w", meta.Kind, name, err)
		}
	}
	unregister := func(ctx context.Context) error {
		for _, del := range deletes {
			if err := del(ctx); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("unregistering the gate policy: %w", err)
			}
		}
		return e.waitWebhookCalled(ctx, ns, false)
	}
	if err := e.waitWebhookCalled(ctx, ns, true); err != nil {
		_ = unregister(ctx)
		return nil, err
	}
	return unregister, nil
}
