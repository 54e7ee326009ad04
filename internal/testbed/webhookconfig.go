package testbed

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// ShippedWebhookConfiguration is config/webhook of the repository at root as kustomize
// builds it: the generated manifests.yaml with webhook_patch.yaml applied. Callers point
// its clientConfig at the webhook they run.
func ShippedWebhookConfiguration(root string) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	read := func(name string) ([]byte, error) {
		raw, err := os.ReadFile(filepath.Join(root, "config", "webhook", name))
		if err != nil {
			return nil, err
		}
		return yaml.YAMLToJSON(raw)
	}
	doc, err := read("manifests.yaml")
	if err != nil {
		return nil, fmt.Errorf("reading manifests.yaml: %w", err)
	}
	ops, err := read("webhook_patch.yaml")
	if err != nil {
		return nil, fmt.Errorf("reading webhook_patch.yaml: %w", err)
	}
	patch, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		return nil, fmt.Errorf("decoding webhook_patch.yaml: %w", err)
	}
	if doc, err = patch.Apply(doc); err != nil {
		return nil, fmt.Errorf("applying webhook_patch.yaml: %w", err)
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := json.Unmarshal(doc, mwc); err != nil {
		return nil, fmt.Errorf("decoding the webhook configuration: %w", err)
	}
	return mwc, nil
}
