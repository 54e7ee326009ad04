// Package chartrender renders the quotagate chart as `helm install --dry-run=client`
// would, with the Helm SDK: values checked against values.schema.json, the chart's
// kubeVersion against the cluster's, and the API versions a cluster serves (which
// admission.mode auto reads). Tools that describe the chart from what it renders use it:
// hack/chartdocs writes the chart README's inventory from it, and hack/docscheck's tests
// compare the docs with it.
package chartrender

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Cluster is what the chart is rendered for.
type Cluster struct {
	// KubeVersion is the cluster's version, e.g. v1.37.2.
	KubeVersion string
	// APIVersions are the group/version/kind the cluster serves beyond Helm's defaults,
	// e.g. admissionregistration.k8s.io/v1/MutatingAdmissionPolicy.
	APIVersions []string
}

// Release is one rendering: its objects in the order Helm applies them, its hooks apart,
// and the notes Helm prints.
type Release struct {
	Objects []*unstructured.Unstructured
	Hooks   []*unstructured.Unstructured
	Notes   string
}

// Render renders the chart in chartDir as release name in namespace on cluster, with
// values over the chart's defaults.
func Render(chartDir, name, namespace string, cluster Cluster, values map[string]any) (Release, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return Release{}, fmt.Errorf("loading the chart: %w", err)
	}
	kv, err := common.ParseKubeVersion(cluster.KubeVersion)
	if err != nil {
		return Release{}, err
	}
	inst := action.NewInstall(action.NewConfiguration())
	inst.DryRunStrategy = action.DryRunClient
	inst.ReleaseName, inst.Namespace, inst.KubeVersion = name, namespace, kv
	inst.APIVersions = cluster.APIVersions
	if values == nil {
		values = map[string]any{}
	}
	rel, err := inst.Run(chrt, values)
	if err != nil {
		return Release{}, err
	}
	r, ok := rel.(*release.Release)
	if !ok {
		return Release{}, fmt.Errorf("unexpected release type %T", rel)
	}
	out := Release{Notes: r.Info.Notes}
	if out.Objects, err = DecodeAll(r.Manifest); err != nil {
		return Release{}, fmt.Errorf("decoding the manifest: %w", err)
	}
	for _, h := range r.Hooks {
		objs, err := DecodeAll(h.Manifest)
		if err != nil {
			return Release{}, fmt.Errorf("decoding hook %s: %w", h.Name, err)
		}
		out.Hooks = append(out.Hooks, objs...)
	}
	return out, nil
}

// decodeAll splits a multi-document YAML stream into objects; empty documents are dropped.
func DecodeAll(stream string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}
