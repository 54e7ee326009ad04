{{/*
Names of the webhook's certificate chain (certificate.yaml): the self-signed root Issuer
(quotagate.issuer.name, in _helpers.tpl) signs the CA Certificate; the CA Issuer signs
the serving Certificate with it. The CA Certificate, its Secret and the CA Issuer share
one name.
*/}}
{{- define "quotagate.ca.name" -}}{{ include "quotagate.fullname" . }}-ca{{- end }}

{{/*
The Certificate whose CA cert-manager's CA injector puts in the webhook's caBundle. With
the chart's own chain it is the CA Certificate: its ca.crt is the CA itself, which does not
change when the serving certificate renews, so the API server keeps trusting the webhook
through every renewal. With certManager.issuerRef, the chart has no CA Certificate: the
serving Certificate's Secret carries the user's issuer's CA in its ca.crt.
*/}}
{{- define "quotagate.caInjectFrom" -}}
{{ .Release.Namespace }}/{{ if .Values.certManager.issuerRef }}{{ include "quotagate.certificate.name" . }}{{ else }}{{ include "quotagate.ca.name" . }}{{ end }}
{{- end }}
