{{/*
quotagate.name is the chart name, or nameOverride.
*/}}
{{- define "quotagate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" }}
{{- end }}

{{/*
quotagate.fullname prefixes every resource name: fullnameOverride, else the release name
when it already contains the chart name, else <release>-<chart>. It is kept short (40)
so that suffixes such as "-webhook-cert" stay within the 63-character limit of labels.
*/}}
{{- define "quotagate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := include "quotagate.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "quotagate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Names of the components and of the objects that refer to each other.
*/}}
{{- define "quotagate.webhook.name" -}}{{ include "quotagate.fullname" . }}-webhook{{- end }}
{{- define "quotagate.manager.name" -}}{{ include "quotagate.fullname" . }}-manager{{- end }}
{{- define "quotagate.certificate.name" -}}{{ include "quotagate.fullname" . }}-webhook-cert{{- end }}
{{- /* cert-manager writes <fullname>-webhook-tls; the manager's rotator fills <fullname>-webhook-internal-tls, which the chart creates empty (cert-rotator.yaml). Distinct names let a release switch modes in one upgrade. */}}
{{- define "quotagate.certificate.secret" -}}{{ include "quotagate.fullname" . }}-webhook-{{ if .Values.certManager.enabled }}tls{{ else }}internal-tls{{ end }}{{- end }}
{{- define "quotagate.priorityClass.name" -}}{{ include "quotagate.fullname" . }}{{- end }}
{{- define "quotagate.issuer.name" -}}{{ include "quotagate.fullname" . }}-selfsigned{{- end }}

{{/*
quotagate.manager.username is the identity the API server sees for the manager: the only
one (with guard.extraAllowedUsers) that the gate guard lets remove the gate.
*/}}
{{- define "quotagate.manager.username" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ include "quotagate.manager.name" . }}
{{- end }}

{{/*
quotagate.guard.allowed is the CEL list of the usernames the gate and placement guards
let do what only the manager does: the manager's, then guard.extraAllowedUsers, each
once, such as ['system:serviceaccount:quotagate-system:quotagate-manager', 'alice'].
*/}}
{{- define "quotagate.guard.allowed" -}}
{{- $allowed := list }}
{{- range prepend .Values.guard.extraAllowedUsers (include "quotagate.manager.username" .) | uniq }}
{{- $allowed = append $allowed (squote .) }}
{{- end }}
{{- printf "[%s]" (join ", " $allowed) }}
{{- end }}

{{/*
quotagate.manager.metricsPort names the manager's metrics port after its scheme.
*/}}
{{- define "quotagate.manager.metricsPort" -}}
{{- if .Values.manager.metricsSecure }}https-metrics{{ else }}metrics{{ end }}
{{- end }}

{{/*
quotagate.image is repository@digest when image.digest is set (it wins over the tag), else
repository:tag, the tag defaulting to appVersion.
*/}}
{{- define "quotagate.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "quotagate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "quotagate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "quotagate.labels" -}}
helm.sh/chart: {{ include "quotagate.chart" . }}
{{ include "quotagate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: quotagate
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
quotagate.componentLabels takes a list: the root context and the component name.
*/}}
{{- define "quotagate.componentLabels" -}}
{{ include "quotagate.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{- define "quotagate.componentSelectorLabels" -}}
{{ include "quotagate.selectorLabels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/*
quotagate.containerSecurityContext is the restricted Pod Security profile for a container.
*/}}
{{- define "quotagate.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "quotagate.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: health
  initialDelaySeconds: 15
  periodSeconds: 20
readinessProbe:
  httpGet:
    path: /readyz
    port: health
  initialDelaySeconds: 5
  periodSeconds: 10
{{- end }}

{{- /* quotagate.priorityClassName is the priority class of a component's pods (list . "webhook"
or "manager"): its priorityClassName, or the chart's own PriorityClass with
priorityClass.create, or none. */}}
{{- define "quotagate.priorityClassName" -}}
{{- $root := index . 0 -}}
{{- $component := index $root.Values (index . 1) -}}
{{- if $component.priorityClassName -}}
{{- $component.priorityClassName -}}
{{- else if $root.Values.priorityClass.create -}}
{{- include "quotagate.priorityClass.name" $root -}}
{{- end -}}
{{- end -}}
