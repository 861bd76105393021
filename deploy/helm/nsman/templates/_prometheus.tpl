{{- /*
The Prometheus that IDLE conditions with traffic ask (prometheus.*), and
the matchers that pin its presets (trafficMatch). Both are unset in the
values of a release that predates them (helm upgrade --reuse-values),
which then asks no Prometheus.
*/}}

{{- /*
nsman.prometheusTokenSecret is the Secret that holds the bearer token sent
to prometheus.url, if any. The token is a credential: it reaches nsman as a
file of this Secret's, never as an argument or a variable.
*/}}
{{- define "nsman.prometheusTokenSecret" -}}
{{- $prom := .Values.prometheus | default dict }}
{{- $secret := dig "token" "existingSecret" "" $prom }}
{{- if and $secret (not $prom.url) }}
{{- fail "prometheus.token is sent to prometheus.url: set prometheus.url too" }}
{{- end }}
{{- $secret }}
{{- end }}

{{- /*
nsman.prometheusCAConfigMap is the ConfigMap that holds the certificates
that sign prometheus.url's serving certificate, if any.
*/}}
{{- define "nsman.prometheusCAConfigMap" -}}
{{- $prom := .Values.prometheus | default dict }}
{{- $configMap := dig "ca" "existingConfigMap" "" $prom }}
{{- if and $configMap (not $prom.url) }}
{{- fail "prometheus.ca signs prometheus.url's certificate: set prometheus.url too" }}
{{- end }}
{{- $configMap }}
{{- end }}

{{- /*
nsman.prometheusArgs are the arguments of nsman sweep that prometheus and
trafficMatch set. Headers and presets are maps, rendered sorted by name so
that the arguments, and with them the CronJob, change only when the values
do.
*/}}
{{- define "nsman.prometheusArgs" -}}
{{- $prom := .Values.prometheus | default dict }}
{{- with $prom.url }}
- {{ printf "--prometheus-url=%s" . | quote }}
{{- end }}
{{- if include "nsman.prometheusTokenSecret" . }}
- --prometheus-token-file=/etc/nsman/prometheus-token/token
{{- end }}
{{- if include "nsman.prometheusCAConfigMap" . }}
- --prometheus-ca-file=/etc/nsman/prometheus-ca/ca.crt
{{- end }}
{{- $headers := $prom.headers | default dict }}
{{- range $name := keys $headers | sortAlpha }}
- {{ printf "--prometheus-header=%s=%s" $name (index $headers $name) | quote }}
{{- end }}
{{- with $prom.timeout }}
- {{ printf "--prometheus-timeout=%s" . | quote }}
{{- end }}
{{- if gt (int $prom.maxSeries) 0 }}
- --prometheus-max-series={{ int $prom.maxSeries }}
{{- end }}
{{- $match := .Values.trafficMatch | default dict }}
{{- range $preset := keys $match | sortAlpha }}
- {{ printf "--traffic-match=%s=%s" $preset (index $match $preset) | quote }}
{{- end }}
{{- end }}
