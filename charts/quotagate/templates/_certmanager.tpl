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

{{/*
certManager.enabled=false: the manager's leader keeps the webhook's CA and serving
certificate in the chart's empty Secret and the CA in the webhook configuration's caBundle
(cert-rotator.yaml). It sees the Secret mounted where the webhook does: the rotator counts
the certificate as delivered once the kubelet has put it there.
*/}}
{{- define "quotagate.certRotatorDir" -}}/tmp/k8s-webhook-server/serving-certs{{- end }}
{{- define "quotagate.certRotatorArgs" -}}
- --webhook-cert-secret={{ include "quotagate.certificate.secret" . }}
- --webhook-cert-namespace={{ .Release.Namespace }}
- --webhook-cert-dir={{ include "quotagate.certRotatorDir" . }}
{{- if include "quotagate.admission.webhook" . }}
- --webhook-configuration={{ include "quotagate.webhook.name" . }}
- --webhook-service={{ include "quotagate.webhook.name" . }}
{{- end }}
{{- if .Values.visibility.enabled }}
- --webhook-cert-extra-dns-names={{ include "quotagate.visibility.dnsNames" . | fromYamlArray | join "," }}
- --visibility-apiservice={{ include "quotagate.visibility.apiservice" . }}
{{- end }}
{{- end }}

{{/*
quotagate.servingCert is "true" when the release needs the serving certificate: for the
webhook (admission.mode webhook) and for the visibility API's APIService. In policy mode
without the visibility API there is no certificate at all.
*/}}
{{- define "quotagate.servingCert" -}}
{{- if or (include "quotagate.admission.webhook" .) .Values.visibility.enabled -}}true{{- end -}}
{{- end }}

{{/*
quotagate.manager.mountsCert is "true" when the manager's pod mounts the serving
certificate's Secret: the rotator watches it delivered (certManager.enabled=false), and the
visibility server serves with it.
*/}}
{{- define "quotagate.manager.mountsCert" -}}
{{- if or (and (not .Values.certManager.enabled) (include "quotagate.servingCert" .)) .Values.visibility.enabled -}}true{{- end -}}
{{- end }}
