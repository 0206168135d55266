{{/*
Named templates of the irqwise chart. They use only Go text/template and Helm's include, fail,
default, quote, indent, nindent, list, dict, hasPrefix, trimPrefix, regexFind, float64 and mulf,
so that tests/k8s/check.sh renders the chart offline with the same engine (Go's text/template)
and no Helm (tests/k8s/render defines those as Helm does).
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


{{/*
What values.schema.json cannot say (it compares no two values), refused before anything renders:
the metrics directory overlapping one of the container's own mount points or the claims
directory, and a resource request above its limit (the API server refuses that pod).
*/}}
{{- define "irqwise.checkValues" -}}
{{- if .Values.metrics.enabled -}}
{{- $dir := .Values.metrics.textfileDir -}}
{{- range $taken := list "/etc/irqwise/conf.d" "/run/irqwise" "/run/udev" "/etc/sysconfig" "/etc/default" "/sys/fs/cgroup" -}}
{{- if include "irqwise.overlap" (list $dir $taken) -}}
{{- fail (printf "metrics.textfileDir %s: the container mounts %s there already; choose a directory of its own" $dir $taken) -}}
{{- end -}}
{{- end -}}
{{- if include "irqwise.overlap" (list $dir .Values.claims.hostDir) -}}
{{- fail (printf "metrics.textfileDir %s and claims.hostDir %s: one host directory mounted twice; give the metrics a directory of their own" $dir .Values.claims.hostDir) -}}
{{- end -}}
{{- end -}}
{{- range $resource := list "cpu" "memory" -}}
{{- $request := index $.Values.resources.requests $resource -}}
{{- $limit := index $.Values.resources.limits $resource -}}
{{- if and $limit (gt (include "irqwise.quantity" $request | float64) (include "irqwise.quantity" $limit | float64)) -}}
{{- fail (printf "resources.requests.%s %s is above resources.limits.%s %s: the API server refuses a request above its limit" $resource $request $resource $limit) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "true" when two absolute paths (a list of two) are the same or one is inside the other. */}}
{{- define "irqwise.overlap" -}}
{{- $a := index . 0 -}}
{{- $b := index . 1 -}}
{{- if or (eq $a $b) (hasPrefix (printf "%s/" $a) $b) (hasPrefix (printf "%s/" $b) $a) -}}
true
{{- end -}}
{{- end -}}

{{/*
A resource quantity of the form the schema allows (digits, a fraction, a suffix) in its base unit
(cores, bytes), for comparisons: "48Mi" is 50331648, "500m" 0.5.
*/}}
{{- define "irqwise.quantity" -}}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" . -}}
{{- $scale := dict "" 1 "m" 0.001 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "Pi" 1125899906842624 "Ei" 1152921504606846976 -}}
{{- mulf (float64 $number) (index $scale (trimPrefix $number .)) -}}
{{- end -}}
