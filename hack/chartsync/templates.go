package main

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// managerRoleName is the ClusterRole that controller-gen writes from the manager's markers
// (`rbac:roleName=quotagate-manager` in the Makefile).
const managerRoleName = "quotagate-manager"

// object is the part of a manifest that chartsync checks before templating it.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
}

// CRDTemplate turns a CRD written by controller-gen into a chart template: rendered only
// when crds.install is set, labelled like the rest of the release, and kept on uninstall
// when crds.keep is set. source names the input in the generated header.
func CRDTemplate(src []byte, source string) ([]byte, error) {
	body, obj, err := singleDocument(src)
	if err != nil {
		return nil, err
	}
	if obj.Kind != "CustomResourceDefinition" {
		return nil, fmt.Errorf("kind is %q, want CustomResourceDefinition", obj.Kind)
	}
	if obj.Metadata.Labels != nil {
		return nil, errors.New("metadata.labels is already set; chartsync adds the release's labels itself")
	}
	lines := strings.Split(escapeActions(body), "\n")
	meta := indexOf(lines, "metadata:")
	if meta < 0 {
		return nil, errors.New("no top-level metadata")
	}
	end := blockEnd(lines, meta, "  ")
	keep := []string{
		`    {{- if .Values.crds.keep }}`,
		`    helm.sh/resource-policy: keep`,
		`    {{- end }}`,
	}
	var insert []string
	if ann := indexOf(lines[meta:end], "  annotations:"); ann >= 0 {
		ann += meta
		annEnd := blockEnd(lines, ann, "    ")
		lines = splice(lines, annEnd, keep...)
	} else {
		insert = append(insert,
			`  {{- if .Values.crds.keep }}`,
			`  annotations:`,
			`    helm.sh/resource-policy: keep`,
			`  {{- end }}`)
	}
	insert = append(insert,
		`  labels:`,
		`    {{- include "quotagate.labels" . | nindent 4 }}`)
	lines = splice(lines, meta+1, insert...)

	var b strings.Builder
	b.WriteString(generatedHeader(source))
	b.WriteString("{{- if .Values.crds.install }}\n")
	b.WriteString(strings.TrimRight(strings.Join(lines, "\n"), "\n"))
	b.WriteString("\n{{- end }}\n")
	return []byte(b.String()), nil
}

// ClusterRoleTemplate turns the manager's ClusterRole written by controller-gen into a chart
// template named and labelled for the release; its rules are copied as they are.
func ClusterRoleTemplate(src []byte, source string) ([]byte, error) {
	body, obj, err := singleDocument(src)
	if err != nil {
		return nil, err
	}
	if obj.Kind != "ClusterRole" || obj.Metadata.Name != managerRoleName {
		return nil, fmt.Errorf("want the ClusterRole %s, got %s %q", managerRoleName, obj.Kind, obj.Metadata.Name)
	}
	lines := strings.Split(escapeActions(body), "\n")
	for _, l := range lines {
		if l == "" || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "-") {
			continue
		}
		switch key, _, _ := strings.Cut(l, ":"); key {
		case "apiVersion", "kind", "metadata", "rules":
		default:
			return nil, fmt.Errorf("unexpected top-level field %q: chartsync copies only rules", key)
		}
	}
	rules := indexOf(lines, "rules:")
	if rules < 0 {
		return nil, errors.New("no rules")
	}

	var b strings.Builder
	b.WriteString(generatedHeader(source))
	b.WriteString(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ include "quotagate.manager.name" . }}
  labels:
    {{- include "quotagate.componentLabels" (list . "manager") | nindent 4 }}
`)
	b.WriteString(strings.TrimRight(strings.Join(lines[rules:], "\n"), "\n"))
	b.WriteString("\n")
	return []byte(b.String()), nil
}

// singleDocument strips the document marker controller-gen starts with and checks that
// src holds exactly one object.
func singleDocument(src []byte) (string, object, error) {
	body := strings.ReplaceAll(string(src), "\r\n", "\n")
	body = strings.TrimPrefix(body, "---\n")
	if strings.Contains("\n"+body, "\n---") {
		return "", object{}, errors.New("more than one YAML document")
	}
	var obj object
	if err := yaml.Unmarshal([]byte(body), &obj); err != nil {
		return "", object{}, fmt.Errorf("parsing YAML: %w", err)
	}
	return body, obj, nil
}

// escapeActions makes text that Go templates would take for an action ("{{") print as
// itself, e.g. in a CRD's field descriptions.
func escapeActions(s string) string {
	return strings.ReplaceAll(s, "{{", `{{ "{{" }}`)
}

// indexOf is the index of the first line equal to want, or -1.
func indexOf(lines []string, want string) int {
	for i, l := range lines {
		if l == want {
			return i
		}
	}
	return -1
}

// blockEnd is the index just after the block that starts at line start: the lines that
// follow it and are indented by at least indent.
func blockEnd(lines []string, start int, indent string) int {
	i := start + 1
	for i < len(lines) && strings.HasPrefix(lines[i], indent) {
		i++
	}
	return i
}

// splice inserts add before index at.
func splice(lines []string, at int, add ...string) []string {
	out := make([]string, 0, len(lines)+len(add))
	out = append(out, lines[:at]...)
	out = append(out, add...)
	return append(out, lines[at:]...)
}
