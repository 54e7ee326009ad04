{{/*
The visibility API (visibility.yaml, docs/visibility.md): the manager serves
visibility.quotagate.io on visibility.port behind a Service and an APIService, with the
webhook's certificate, which names the visibility Service too.
*/}}
{{- define "quotagate.visibility.name" -}}{{ include "quotagate.fullname" . }}-visibility{{- end }}
{{- define "quotagate.visibility.apiservice" -}}v1alpha1.visibility.quotagate.io{{- end }}
{{- /* The visibility Service's DNS names, in the serving certificate. */}}
{{- define "quotagate.visibility.dnsNames" -}}
- {{ include "quotagate.visibility.name" . }}.{{ .Release.Namespace }}.svc
- {{ include "quotagate.visibility.name" . }}.{{ .Release.Namespace }}.svc.cluster.local
{{- end -}}
