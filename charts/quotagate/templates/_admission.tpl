{{- /*
quotagate.admission.mode is the admission step this release installs: "policy" (the
MutatingAdmissionPolicy in admission-policy.yaml, the API server adds the gate) or "webhook"
(the webhook Deployment, Service, configuration, certificate and PDB). admission.mode auto
picks policy where the API server serves admissionregistration.k8s.io/v1
MutatingAdmissionPolicy (Kubernetes 1.36 and later), webhook elsewhere (docs/admission.md).
*/}}
{{- define "quotagate.admission.mode" -}}
{{- $mode := .Values.admission.mode | default "auto" -}}
{{- if eq $mode "auto" -}}
{{- if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy" -}}policy{{- else -}}webhook{{- end -}}
{{- else -}}
{{- $mode -}}
{{- end -}}
{{- end -}}

{{- /* quotagate.admission.webhook is "true" when the release runs the webhook. */}}
{{- define "quotagate.admission.webhook" -}}
{{- if eq (include "quotagate.admission.mode" .) "webhook" -}}true{{- end -}}
{{- end -}}

{{- /* quotagate.admission.exemptDaemonSets is admission.exemptDaemonSets as a CEL list of
'namespace/name' strings ([] by default). values.schema.json admits only DNS names, so no
quote can end the CEL string. */}}
{{- define "quotagate.admission.exemptDaemonSets" -}}
{{- $refs := list -}}
{{- range .Values.admission.exemptDaemonSets -}}
{{- $refs = append $refs (squote .) -}}
{{- end -}}
[{{ join ", " $refs }}]
{{- end -}}

{{- /* quotagate.admission.skipConditions are the matchConditions that skip the pod shapes
their legitimate creators make (docs/admission.md), shared by the webhook configuration and
admission-policy.yaml. */}}
{{- define "quotagate.admission.skipConditions" -}}
- name: not-mirror-pod-from-a-node
  expression: >-
    !has(object.metadata.annotations) ||
    !('kubernetes.io/config.mirror' in object.metadata.annotations) ||
    !(request.userInfo.username.startsWith('system:node:') &&
      has(request.userInfo.groups) && 'system:nodes' in request.userInfo.groups)
- name: not-bound-by-a-node
  expression: >-
    !has(object.spec.nodeName) || object.spec.nodeName == '' ||
    !(request.userInfo.username.startsWith('system:node:') &&
      has(request.userInfo.groups) && 'system:nodes' in request.userInfo.groups)
- name: not-exempt-daemonset-pod-from-its-controller
  expression: >-
    !has(object.metadata.ownerReferences) ||
    !object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller &&
      r.kind == 'DaemonSet' && r.apiVersion.startsWith('apps/') &&
      (request.namespace + '/' + r.name) in {{ include "quotagate.admission.exemptDaemonSets" . }}) ||
    !(request.userInfo.username in
      ['system:serviceaccount:kube-system:daemon-set-controller', 'system:kube-controller-manager'])
{{- end -}}
