{{/* Chart name, truncated to 63 characters. */}}
{{- define "nodewarden.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: the release name when it already contains the chart name. */}}
{{- define "nodewarden.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "nodewarden.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "nodewarden.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nodewarden.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "nodewarden.labels" -}}
helm.sh/chart: {{ include "nodewarden.chart" . }}
{{ include "nodewarden.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Karpenter's chart keeps some values under `controller` (env, envFrom, extraVolumeMounts,
     resources, image, metrics.port): its values file works here, each key meaning what the
     chart's own key of the same meaning does. */}}
{{- define "nodewarden.controller" -}}
{{- toYaml (.Values.controller | default dict) }}
{{- end }}

{{/* The replicas: Karpenter's `replicas` when given, else replicaCount. */}}
{{- define "nodewarden.replicas" -}}
{{- if kindIs "invalid" .Values.replicas }}
{{- .Values.replicaCount }}
{{- else }}
{{- .Values.replicas }}
{{- end }}
{{- end }}

{{/* The metrics port: Karpenter's controller.metrics.port when given, else metrics.port. */}}
{{- define "nodewarden.metricsPort" -}}
{{- $c := fromYaml (include "nodewarden.controller" .) }}
{{- $m := $c.metrics | default dict }}
{{- $m.port | default .Values.metrics.port }}
{{- end }}

{{/* settings.clusterName, required: without it the scaler does not start (its instances'
     tags and discovery name the cluster). */}}
{{- define "nodewarden.clusterName" -}}
{{- required "settings.clusterName is required: the cluster's name, as in its instances' kubernetes.io/cluster/<name> tag and the discovery tags of the setup kit (manifests/aws/); e.g. --set settings.clusterName=my-cluster" .Values.settings.clusterName }}
{{- end }}

{{- define "nodewarden.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "nodewarden.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The container image: <repository>:<tag>, pinned @<digest> by image.digest or, when
     image.tag and image.digest are both empty, by the digest `make release` stamped into
     the packaged chart (annotation nodewarden.io/image-digest). The stamp is not a value,
     so `helm upgrade --reuse-values` to a newer chart cannot keep an older digest. */}}
{{- define "nodewarden.image" -}}
{{- $c := fromYaml (include "nodewarden.controller" .) }}
{{- $ci := $c.image | default dict }}
{{- $repo := $ci.repository | default .Values.image.repository }}
{{- $tag := $ci.tag | default .Values.image.tag }}
{{- $digest := $ci.digest | default .Values.image.digest }}
{{- if and (not $digest) (not $tag) }}
{{- $digest = index (.Chart.Annotations | default dict) "nodewarden.io/image-digest" | default "" }}
{{- end }}
{{- printf "%s:%s" $repo ($tag | default .Chart.AppVersion) }}
{{- with $digest }}@{{ . }}{{ end }}
{{- end }}

{{/* The TLS Secret the pods mount. */}}
{{- define "nodewarden.tlsSecretName" -}}
{{- if eq .Values.certificates.mode "secret" }}
{{- required "certificates.secret.name is required with certificates.mode=secret" .Values.certificates.secret.name }}
{{- else }}
{{- printf "%s-tls" (include "nodewarden.fullname" .) }}
{{- end }}
{{- end }}

{{- define "nodewarden.awsSecretName" -}}
{{- default (printf "%s-aws" (include "nodewarden.fullname" .)) .Values.aws.secret.name }}
{{- end }}

{{/* Namespaces the pod webhooks and the GPU policy leave alone. */}}
{{- define "nodewarden.exemptNamespaces" -}}
{{- $list := list .Release.Namespace }}
{{- range .Values.webhook.exemptNamespaces }}{{ if not (has . $list) }}{{ $list = append $list . }}{{ end }}{{ end }}
{{- toJson $list }}
{{- end }}

{{- define "nodewarden.certManagerAnnotation" -}}
{{- if eq .Values.certificates.mode "cert-manager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "nodewarden.fullname" .) }}
{{- end }}
{{- end }}
