package docscheck

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"k8s.io/client-go/util/jsonpath"
)

// fieldFiles are the documents whose field names are checked: the docs, and the alerts'
// annotations (which send the reader to the runbook).
func fieldFiles(t *testing.T) []string {
	return append(docFiles(t), prometheusRuleFile)
}

var (
	// kubectlCommand is a kubectl command that reads objects: `kubectl get RESOURCE ...`
	// or `kubectl run ...` (a pod).
	kubectlCommand = regexp.MustCompile(`kubectl\s+(get|run)\s+(.*)`)
	// jsonpathArg is the template of -o jsonpath=..., quoted or not.
	jsonpathArg = regexp.MustCompile(`jsonpath=(?:'([^']*)'|"([^"]*)"|(\S+))`)
	// fieldRef is a field path written out in prose or code: spec.hard,
	// .status.conditions[?(...)].message, status.containerStatuses[].allocatedResources.
	// A path that continues another (object.spec.nodeName in CEL) is not one.
	fieldRef = regexp.MustCompile(`(?:^|[^\w.\]])\.?((?:spec|status)(?:\.[A-Za-z][A-Za-z0-9]*(?:\[[^\]]*\])*)+)`)
	// enumValue is a field written with a value, `status.state: Closed`.
	enumValue = regexp.MustCompile(`^\.?((?:spec|status)(?:\.[A-Za-z][A-Za-z0-9]*)+):\s*([A-Z][A-Za-z]*)$`)
)

// Every `kubectl get budget ... -o jsonpath='{...}'` in the docs reads fields the CRD
// has, and so does every jsonpath on a pod: a copy-paste command that prints nothing is
// worse than none (the runbook's .status.neverFit did, issue 34).
func TestJSONPathsExist(t *testing.T) {
	kinds := append(crdKinds(t), builtinKinds()...)
	var p problems
	checked := 0
	for _, file := range fieldFiles(t) {
		for _, l := range readLines(t, file) {
			for _, span := range codeSpans(l) {
				m := kubectlCommand.FindStringSubmatch(span)
				if m == nil {
					continue
				}
				jp := jsonpathArg.FindStringSubmatch(m[2])
				if jp == nil {
					continue
				}
				template := jp[1] + jp[2] + jp[3]
				resource := "pod"
				if m[1] == "get" {
					resource = firstArg(m[2])
				}
				k, ok := kindFor(kinds, resource)
				if !ok {
					continue // another kind (a Prometheus, the plugin's output)
				}
				checked++
				for _, missing := range checkJSONPath(k, template) {
					p.add(l.pos(), "%s: %s", template, missing)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no jsonpath on a Budget, ClusterBudget or pod found in the docs: the extraction is broken (the runbook has one)")
	}
	p.report(t, "jsonpath expressions that read fields that do not exist")
}

// firstArg is the first argument of a kubectl command line that is not a flag or a
// flag's value.
func firstArg(args string) string {
	fields := strings.Fields(args)
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case f == "-n" || f == "--namespace" || f == "-o" || f == "-l" || f == "--selector":
			i++
		case strings.HasPrefix(f, "-"):
		default:
			return f
		}
	}
	return ""
}

// checkJSONPath walks a jsonpath template over kind k's fields and returns what it reads
// that does not exist, or why the template does not parse.
func checkJSONPath(k kind, template string) []string {
	parser, err := jsonpath.Parse("docs", template)
	if err != nil {
		return []string{"does not parse: " + err.Error()}
	}
	var missing []string
	for _, n := range parser.Root.Nodes {
		if list, ok := n.(*jsonpath.ListNode); ok {
			missing = append(missing, walkJSONPath(k, nil, list)...)
		}
	}
	return missing
}

// walkJSONPath follows the nodes of one {...} from path; a filter's fields are read on
// the list's items.
func walkJSONPath(k kind, path []string, list *jsonpath.ListNode) []string {
	var missing []string
	for _, n := range list.Nodes {
		switch n := n.(type) {
		case *jsonpath.FieldNode:
			if n.Value == "@" || n.Value == "" {
				continue
			}
			path = append(path, n.Value)
			if _, at, ok := k.lookup(path); !ok {
				return append(missing, "no field "+at+" in "+k.name)
			}
		case *jsonpath.ArrayNode:
			path = append(path, "[]")
		case *jsonpath.FilterNode:
			path = append(path, "[]")
			missing = append(missing, walkJSONPath(k, slices.Clone(path), n.Left)...)
			missing = append(missing, walkJSONPath(k, slices.Clone(path), n.Right)...)
		case *jsonpath.ListNode:
			missing = append(missing, walkJSONPath(k, slices.Clone(path), n)...)
		case *jsonpath.UnionNode:
			for _, u := range n.Nodes {
				missing = append(missing, walkJSONPath(k, slices.Clone(path), u)...)
			}
			return missing
		case *jsonpath.RecursiveNode, *jsonpath.WildcardNode:
			return missing // ..name or *: any field below
		}
	}
	return missing
}

// splitPath turns status.conditions[?(...)].message into status, conditions, [], message.
func splitPath(ref string) []string {
	var path []string
	for _, part := range strings.Split(ref, ".") {
		name, rest, indexed := strings.Cut(part, "[")
		path = append(path, name)
		if indexed {
			for range strings.Count("["+rest, "[") {
				path = append(path, "[]")
			}
		}
	}
	return path
}

// Every spec.x or status.x the docs name, in code or prose, is a field of a Budget or
// ClusterBudget, or of the pod or DeviceClass the docs talk about; written with a value
// (`status.state: Closed`), the value is one the CRD allows.
func TestFieldReferencesExist(t *testing.T) {
	crds := crdKinds(t)
	kinds := append(slices.Clone(crds), builtinKinds()...)
	var p problems
	refs := 0
	for _, file := range fieldFiles(t) {
		for _, l := range readLines(t, file) {
			for _, span := range codeSpans(l) {
				// Filters inside a jsonpath are TestJSONPathsExist's.
				text := regexp.MustCompile(`\[\?\([^)]*\)\]`).ReplaceAllString(span, "[]")
				for _, m := range fieldRef.FindAllStringSubmatch(text, -1) {
					refs++
					if !existsIn(kinds, splitPath(m[1])) {
						p.add(l.pos(), "%s: no such field in %s", m[1], kindNames(kinds))
					}
				}
				if m := enumValue.FindStringSubmatch(span); m != nil {
					if allowed, ok := enumOf(crds, splitPath(m[1])); ok && !slices.Contains(allowed, m[2]) {
						p.add(l.pos(), "%s: %s is not one of the values the CRD allows (%s)", m[1], m[2], strings.Join(allowed, ", "))
					}
				}
			}
		}
	}
	if refs < 20 {
		t.Errorf("only %d field references found in the docs: the extraction is broken", refs)
	}
	p.report(t, "field references that do not exist")
}

func existsIn(kinds []kind, path []string) bool {
	for _, k := range kinds {
		if _, _, ok := k.lookup(path); ok {
			return true
		}
	}
	return false
}

// enumOf is the values the field at path allows in the first CRD that has them.
func enumOf(kinds []kind, path []string) ([]string, bool) {
	for _, k := range kinds {
		if f, _, ok := k.lookup(path); ok && f != nil && len(f.enum()) > 0 {
			return f.enum(), true
		}
	}
	return nil, false
}

// Every Budget and ClusterBudget written out in the docs' YAML has only fields the CRD
// has: an example that the API server would refuse, or prune, teaches the wrong thing.
func TestYAMLExamplesMatchTheCRD(t *testing.T) {
	kinds := crdKinds(t)
	var p problems
	examples := 0
	for _, file := range docFiles(t) {
		lines := readLines(t, file)
		for i := 0; i < len(lines); {
			if !lines[i].code {
				i++
				continue
			}
			start := i
			var block []string
			for i < len(lines) && lines[i].code && (i == start || lines[i].n == lines[i-1].n+1) {
				block = append(block, lines[i].text)
				i++
			}
			if lines[start].fence != "yaml" || !strings.Contains(strings.Join(block, "\n"), "quotagate.io/v1alpha1") {
				continue
			}
			dec := yaml.NewDecoder(strings.NewReader(strings.Join(block, "\n")))
			for {
				var doc yaml.Node
				if err := dec.Decode(&doc); err != nil {
					if err.Error() != "EOF" {
						p.add(lines[start].pos(), "the YAML example does not parse: %v", err)
					}
					break
				}
				if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
					continue
				}
				obj := doc.Content[0]
				k, ok := kindFor(kinds, strings.ToLower(scalar(obj, "kind")))
				if !ok {
					continue
				}
				examples++
				for _, bad := range unknownKeys(k, nil, obj) {
					p.add(lines[start+bad.line-1].pos(), "%s: no such field in %s", bad.path, k.name)
				}
			}
		}
	}
	if examples == 0 {
		t.Error("no Budget or ClusterBudget found in the docs' YAML: the extraction is broken (README has one)")
	}
	p.report(t, "fields in YAML examples that the CRD does not have")
}

func scalar(m *yaml.Node, key string) string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1].Value
		}
	}
	return ""
}

type badKey struct {
	path string
	line int // in the block, 1-based
}

// unknownKeys walks a YAML mapping over the kind's fields.
func unknownKeys(k kind, path []string, m *yaml.Node) []badKey {
	var bad []badKey
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, v := m.Content[i], m.Content[i+1]
		p := append(slices.Clone(path), key.Value)
		if len(path) == 0 && (key.Value == "apiVersion" || key.Value == "kind") {
			continue
		}
		f, at, ok := k.lookup(p)
		switch {
		case !ok:
			bad = append(bad, badKey{at, key.Line})
		case f == nil: // a map or free-form: its keys are the user's
		case v.Kind == yaml.MappingNode:
			bad = append(bad, unknownKeys(k, p, v)...)
		case v.Kind == yaml.SequenceNode:
			for _, item := range v.Content {
				if item.Kind == yaml.MappingNode {
					bad = append(bad, unknownKeys(k, append(slices.Clone(p), "[]"), item)...)
				}
			}
		}
	}
	return bad
}
