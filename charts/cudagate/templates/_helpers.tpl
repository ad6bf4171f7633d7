{{/* The name of every object the chart makes. */}}
{{- define "cudagate.fullname" -}}
{{- default "cudagate" .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* What selects the replicas: the Deployment's selector, the Service's,
the PodDisruptionBudget's and the anti-affinity's. */}}
{{- define "cudagate.selectorLabels" -}}
app.kubernetes.io/name: cudagate
app.kubernetes.io/component: webhook
{{- end -}}

{{- define "cudagate.labels" -}}
app.kubernetes.io/name: cudagate
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "cudagate.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}
{{- end -}}

{{/* The Service's DNS name, which the API server dials and verifies. */}}
{{- define "cudagate.serviceHost" -}}
{{ include "cudagate.fullname" . }}.{{ .Release.Namespace }}.svc
{{- end -}}

{{- define "cudagate.tlsSecret" -}}
{{- if eq .Values.certificates.mode "secret" -}}
{{ .Values.certificates.secret.name }}
{{- else -}}
{{ include "cudagate.fullname" . }}-tls
{{- end -}}
{{- end -}}

{{/* The self-signed CA and certificate, made once per render and kept
across upgrades: the Secret already in the cluster is read back (lookup
answers nothing under `helm template` and --dry-run, which make new ones). */}}
{{- define "cudagate.selfSigned" -}}
{{- if not .cudagateSelfSigned -}}
{{- $secretName := include "cudagate.tlsSecret" . -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace $secretName -}}
{{- $host := include "cudagate.serviceHost" . -}}
{{- if and $existing $existing.data (index $existing.data "ca.crt") (index $existing.data "tls.crt") (index $existing.data "tls.key") -}}
{{- $_ := set . "cudagateSelfSigned" (dict "ca" (index $existing.data "ca.crt") "crt" (index $existing.data "tls.crt") "key" (index $existing.data "tls.key")) -}}
{{- else -}}
{{- $days := int .Values.certificates.selfSigned.validityDays -}}
{{- $ca := genCA "cudagate webhook CA" $days -}}
{{- $name := include "cudagate.fullname" . -}}
{{- $dns := list $host (printf "%s.cluster.local" $host) (printf "%s.%s" $name .Release.Namespace) $name -}}
{{- $cert := genSignedCert $host nil $dns $days $ca -}}
{{- $_ := set . "cudagateSelfSigned" (dict "ca" ($ca.Cert | b64enc) "crt" ($cert.Cert | b64enc) "key" ($cert.Key | b64enc)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The caBundle of every webhook: none with cert-manager (its cainjector
writes it). */}}
{{- define "cudagate.caBundle" -}}
{{- if eq .Values.certificates.mode "selfSigned" -}}
{{- include "cudagate.selfSigned" . -}}
{{ .cudagateSelfSigned.ca }}
{{- else if eq .Values.certificates.mode "secret" -}}
{{ .Values.certificates.secret.caBundle }}
{{- end -}}
{{- end -}}
