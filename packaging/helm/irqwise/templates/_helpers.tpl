{{/*
Named templates of the irqwise chart. They use only Go text/template and Helm's include, default,
quote, indent and nindent, so that tests/k8s/check.sh renders the chart offline with the same
engine (Go's text/template) and no Helm.
*/}}

{{/* The name of every object: fullnameOverride, else the release name. */}}
{{- define "irqwise.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride -}}
{{- end -}}

{{/* The labels the DaemonSet selects its pods by; never change them in an upgrade. */}}
{{- define "irqwise.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "irqwise.labels" -}}
{{ include "irqwise.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: daemon
app.kubernetes.io/part-of: irqwise
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The image: repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "irqwise.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}

{{/* The container path of the metrics file (the daemon's metrics_file), "" when disabled. */}}
{{- define "irqwise.metricsFile" -}}
{{- if .Values.metrics.enabled -}}
{{ printf "%s/irqwise.prom" .Values.metrics.textfileDir }}
{{- end -}}
{{- end -}}
