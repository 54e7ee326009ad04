{{- /*
quotagate.admission.mode is the admission step this release installs: "policy" (the
MutatingAdmissionPolicy in admission-policy.yaml, the API server adds the gate) or "webhook"
(the webhook Deployment, Service, configuration, certificate and PDB). admission.mode auto
picks policy where the API server serves admissionregistration.k8s.io/v1
MutatingAdmissionPolicy (Kubernetes 1.36 and later), webhook elsewhere (docs/admission.md).

"switching" is both at once, for one revision: an upgrade to the policy of a release whose
webhook is in place (its MutatingWebhookConfiguration exists) and whose policy binding is
not yet. The API server loads a new policy binding and drops a deleted webhook configuration
through two informers that nothing orders, so removing the webhook in the upgrade that adds
the policy lets pods created in between through ungated. Switching keeps the webhook (both
add the same gate; each skips a pod already gated), and the next upgrade, finding the
binding in place, removes it. lookup finds nothing under helm template and --dry-run, which
then render the policy alone.
*/}}
{{- define "quotagate.admission.mode" -}}
{{- $mode := .Values.admission.mode | default "auto" -}}
{{- if eq $mode "auto" -}}
{{- $mode = ternary "policy" "webhook" (.Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy") -}}
{{- end -}}
{{- if eq $mode "policy" -}}
{{- $webhook := lookup "admissionregistration.k8s.io/v1" "MutatingWebhookConfiguration" "" (include "quotagate.webhook.name" .) -}}
{{- $binding := lookup "admissionregistration.k8s.io/v1" "MutatingAdmissionPolicyBinding" "" (printf "%s-gate" (include "quotagate.fullname" .)) -}}
{{- if and $webhook (not $binding) -}}
{{- $mode = "switching" -}}
{{- end -}}
{{- end -}}
{{- $mode -}}
{{- end -}}

{{- /* quotagate.admission.webhook is "true" when the release runs the webhook (webhook
mode, or switching to the policy). */}}
{{- define "quotagate.admission.webhook" -}}
{{- if has (include "quotagate.admission.mode" .) (list "webhook" "switching") -}}true{{- end -}}
{{- end -}}

{{- /* quotagate.admission.policy is "true" when the release installs the gate policy
(policy mode, or switching to it). */}}
{{- define "quotagate.admission.policy" -}}
{{- if has (include "quotagate.admission.mode" .) (list "policy" "switching") -}}true{{- end -}}
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
