{{/* Names: the release's objects are called <fullname>; the scheduler's Service and
     Lease are named after schedulerName, as in HAMi's chart. */}}
{{- define "devshare.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "devshare.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "devshare.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{- define "devshare.scheduler" -}}
{{- printf "%s-scheduler" (include "devshare.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "devshare.tlsSecret" -}}
{{- printf "%s-tls" (include "devshare.scheduler" .) -}}
{{- end -}}

{{- define "devshare.webhook" -}}
{{- printf "%s-webhook" (include "devshare.scheduler" .) -}}
{{- end -}}

{{- define "devshare.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "devshare.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.global.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "devshare.selectorLabels" -}}
app.kubernetes.io/name: {{ include "devshare.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: scheduler
{{- end -}}

{{/* image (dict "root" $ "image" IMAGE ["tag" DEFAULT]): registry/repository:tag; the
     global registry wins over the image's own, an empty tag is DEFAULT (the chart's
     appVersion when not given). */}}
{{- define "devshare.image" -}}
{{- $registry := .root.Values.global.imageRegistry | default .image.registry -}}
{{- $tag := .image.tag | default .tag | default .root.Chart.AppVersion -}}
{{- if $registry -}}
{{- printf "%s/%s:%s" $registry .image.repository $tag -}}
{{- else -}}
{{- printf "%s:%s" .image.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "devshare.pullSecrets" -}}
{{- $secrets := concat .Values.global.imagePullSecrets .Values.scheduler.kubeScheduler.image.pullSecrets .Values.devshare.image.pullSecrets | uniq -}}
{{- if $secrets }}
imagePullSecrets:
{{- range $secrets }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Replicas: one unless leader election lets several wait. */}}
{{- define "devshare.replicas" -}}
{{- if .Values.scheduler.leaderElect -}}{{ .Values.scheduler.replicas }}{{- else -}}1{{- end -}}
{{- end -}}
