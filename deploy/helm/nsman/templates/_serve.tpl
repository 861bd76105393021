{{- /*
nsman.serve is the serve values, {} in a release that predates them
(helm upgrade --reuse-values).
*/}}
{{- define "nsman.serve" -}}
{{- toJson (.Values.serve | default dict) }}
{{- end }}

{{/* nsman.serveName names serve's objects: <fullname>-serve. */}}
{{- define "nsman.serveName" -}}
{{- printf "%s-serve" (include "nsman.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* nsman.serveSelectorLabels tell serve's pods from the sweeps'. */}}
{{- define "nsman.serveSelectorLabels" -}}
{{ include "nsman.selectorLabels" . }}
app.kubernetes.io/component: serve
{{- end }}

{{/* nsman.serveMetadata is the labels and annotations of serve's objects. */}}
{{- define "nsman.serveMetadata" -}}
labels:
  {{- merge (dict "app.kubernetes.io/component" "serve") (include "nsman.labels" . | fromYaml) | toYaml | nindent 2 }}
{{- with .Values.commonAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- /*
nsman.linksKeySecret is the Secret that holds the key that signs links,
with serve.enabled (which needs it, and serve.linksURL): the sweeps sign
with it, serve checks with it. Empty without serve.enabled.
*/}}
{{- define "nsman.linksKeySecret" -}}
{{- $serve := include "nsman.serve" . | fromJson }}
{{- if $serve.enabled }}
{{- $key := $serve.signingKey | default dict }}
{{- if and $key.existingSecret $key.value }}
{{- fail "serve.signingKey: set existingSecret or value, not both" }}
{{- end }}
{{- if not (or $key.existingSecret $key.value) }}
{{- fail "serve.enabled: set serve.signingKey.existingSecret (a Secret you create, e.g. kubectl create secret generic nsman-links-signing-key --from-literal=key=\"$(openssl rand -hex 32)\") or serve.signingKey.value: the key that signs links, which the sweeps and serve share" }}
{{- end }}
{{- if not $serve.linksURL }}
{{- fail "serve.enabled: set serve.linksURL, the URL people reach serve at (e.g. https://nsman.example.com): the links point there" }}
{{- end }}
{{- if not (regexMatch "^https?://[^/?#\\s]+(/[^?#\\s]*)?$" $serve.linksURL) }}
{{- fail (printf "serve.linksURL %q: want an absolute http or https URL with no query or fragment" $serve.linksURL) }}
{{- end }}
{{- if $key.existingSecret }}
{{- $key.existingSecret }}
{{- else }}
{{- printf "%s-links-signing-key" (include "nsman.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- /*
nsman.linksKeyItem is the Secret's key that holds the links' signing key.
*/}}
{{- define "nsman.linksKeyItem" -}}
{{- $key := (include "nsman.serve" . | fromJson).signingKey | default dict }}
{{- ternary ($key.existingSecretKey | default "key") "key" (not (empty $key.existingSecret)) }}
{{- end }}

{{- /*
nsman.serveHost is the host serve's Ingress answers for: serve.ingress.host,
else the host of serve.linksURL; another host than linksURL's is refused,
for the links and the buttons' origin are linksURL's.
*/}}
{{- define "nsman.serveHost" -}}
{{- $serve := include "nsman.serve" . | fromJson }}
{{- $linksHost := regexReplaceAll ":[0-9]+$" ((urlParse $serve.linksURL).host | lower) "" }}
{{- $host := dig "ingress" "host" "" $serve | lower }}
{{- if and $host (ne $host $linksHost) }}
{{- fail (printf "serve.ingress.host %q is not the host of serve.linksURL (%q): the links point to linksURL, and serve takes a button's POST from its origin alone" $host $linksHost) }}
{{- end }}
{{- $linksHost }}
{{- end }}

{{- /* nsman.serveArgs are the arguments of nsman serve. */}}
{{- define "nsman.serveArgs" -}}
{{- $serve := include "nsman.serve" . | fromJson -}}
- serve
- --listen=:8080
- --links-signing-key-file=/etc/nsman/links/key
- {{ printf "--links-url=%s" $serve.linksURL | quote }}
{{- with ($serve.maxHold | default .Values.maxHold) }}
- {{ printf "--max-hold=%s" . | quote }}
{{- end }}
{{- with $serve.userHeader }}
- {{ printf "--user-header=%s" . | quote }}
{{- end }}
- --log-format={{ .Values.log.format }}
{{- with .Values.log.level }}
- --log-level={{ . }}
{{- end }}
{{- end }}
