{{/* The image, tag defaulting to the chart's appVersion. */}}
{{- define "dentrylab.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The exporter pods' selector labels. */}}
{{- define "dentrylab.selector" -}}
app.kubernetes.io/name: dentrylab-exporter
{{- end -}}
