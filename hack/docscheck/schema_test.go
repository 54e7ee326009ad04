package docscheck

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	visv1 "github.com/quotagate/quotagate/api/visibility/v1alpha1"
)

// crdDir holds the CRDs controller-gen writes from api/v1alpha1 (the chart's are copies).
const crdDir = "config/crd/bases"

// fieldTree is a kind's fields, walked one name at a time.
type fieldTree interface {
	// child is the field name of this object, or the item of this list when name is
	// "[]". open reports that anything below is allowed (a map's keys, a field that
	// keeps unknown fields).
	child(name string) (next fieldTree, ok, open bool)
	// enum is the values a string field allows, if it has a list of them.
	enum() []string
}

// crdField is a field of a CRD's openAPIV3Schema.
type crdField struct {
	s *apiextensionsv1.JSONSchemaProps
}

func (f crdField) child(name string) (fieldTree, bool, bool) {
	s := f.s
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		return nil, true, true
	}
	if s.Type == "array" && s.Items != nil && s.Items.Schema != nil {
		if name == "[]" {
			return crdField{s.Items.Schema}, true, false
		}
		// status.conditions.type reads as "the type of each condition".
		return crdField{s.Items.Schema}.child(name)
	}
	if p, ok := s.Properties[name]; ok {
		return crdField{&p}, true, false
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		return nil, true, true // a map: what follows is a key (spec.hard.requests.cpu)
	}
	if s.Type == "object" && len(s.Properties) == 0 {
		return nil, true, true // metadata: the API server's, not the CRD's
	}
	return nil, false, false
}

func (f crdField) enum() []string {
	var out []string
	for _, v := range f.s.Enum {
		out = append(out, strings.Trim(string(v.Raw), `"`))
	}
	return out
}

// goField is a field of a built-in kind, by its Go type's json tags.
type goField struct{ t reflect.Type }

func (f goField) child(name string) (fieldTree, bool, bool) {
	t := f.t
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if name == "[]" {
			return goField{t.Elem()}, true, false
		}
		return goField{t.Elem()}.child(name)
	case reflect.Map:
		return nil, true, true
	case reflect.Struct:
		for i := range t.NumField() {
			sf := t.Field(i)
			tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if sf.Anonymous && tag == "" {
				if next, ok, open := (goField{sf.Type}).child(name); ok {
					return next, ok, open
				}
				continue
			}
			if tag == name {
				return goField{sf.Type}, true, false
			}
		}
	}
	return nil, false, false
}

func (goField) enum() []string { return nil }

// kind is an object kind the docs talk about, and the names kubectl knows it by.
type kind struct {
	name      string
	resources []string // plural, singular, short names, plural.group
	root      fieldTree
}

// lookup walks path (field names, "[]" for a list's items) from the kind's root; it
// returns the field reached, or the part of the path that does not exist.
func (k kind) lookup(path []string) (fieldTree, string, bool) {
	cur := k.root
	for i, name := range path {
		next, ok, open := cur.child(name)
		if !ok {
			return nil, joinPath(path[:i+1]), false
		}
		if open {
			return nil, "", true
		}
		cur = next
	}
	return cur, "", true
}

// crdKinds are Budget, ClusterBudget and Flavor, from the CRDs in the tree.
func crdKinds(t *testing.T) []kind {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, crdDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []kind
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Schema == nil {
			t.Fatalf("%s: want one version with a schema, found %d versions", f, len(crd.Spec.Versions))
		}
		n := crd.Spec.Names
		kinds = append(kinds, kind{
			name:      n.Kind,
			resources: append([]string{n.Plural, n.Singular, n.Plural + "." + crd.Spec.Group}, n.ShortNames...),
			root:      crdField{crd.Spec.Versions[0].Schema.OpenAPIV3Schema},
		})
	}
	if len(kinds) != 5 {
		t.Fatalf("found %d CRDs in %s, want Budget, ClusterBudget, Flavor, BudgetWindow and ClusterBudgetWindow", len(kinds), crdDir)
	}
	return kinds
}

// builtinKinds are the other kinds whose fields the docs name: a pod's (spec.nodeName,
// status.containerStatuses[].allocatedResources), a DeviceClass's
// (spec.extendedResourceName), the Workload API's PodGroup's and CompositePodGroup's
// (spec.schedulingPolicy.gang) and the visibility API's PodSimulation's (spec.template,
// status.pods).
func builtinKinds() []kind {
	return []kind{
		{name: "PodSimulation", resources: []string{"podsimulations", "podsimulation"}, root: goField{reflect.TypeFor[visv1.PodSimulation]()}},
		{name: "Pod", resources: []string{"pods", "pod", "po"}, root: goField{reflect.TypeFor[corev1.Pod]()}},
		{name: "DeviceClass", resources: []string{"deviceclasses", "deviceclass"}, root: goField{reflect.TypeFor[resourcev1.DeviceClass]()}},
		{name: "PodGroup", resources: []string{"podgroups", "podgroup"}, root: goField{reflect.TypeFor[schedulingv1beta1.PodGroup]()}},
		{name: "CompositePodGroup", resources: []string{"compositepodgroups", "compositepodgroup"}, root: goField{reflect.TypeFor[schedulingv1alpha3.CompositePodGroup]()}},
	}
}

// kindFor is the kind a kubectl resource argument names ("budget", "budgets/team-a",
// "budgets.quotagate.io").
func kindFor(kinds []kind, resource string) (kind, bool) {
	resource, _, _ = strings.Cut(resource, "/")
	for _, k := range kinds {
		if slices.Contains(k.resources, strings.ToLower(resource)) {
			return k, true
		}
	}
	return kind{}, false
}

func kindNames(kinds []kind) string {
	var names []string
	for _, k := range kinds {
		names = append(names, k.name)
	}
	return strings.Join(names, ", ")
}

// joinPath writes a path as the docs do: status.conditions[].type.
func joinPath(path []string) string {
	return strings.ReplaceAll(strings.Join(path, "."), ".[]", "[]")
}
