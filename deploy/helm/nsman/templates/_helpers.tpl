{{/* nsman.name is the chart's name, or nameOverride. */}}
{{- define "nsman.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
nsman.fullname names the objects: fullnameOverride, else the release name
when it contains the chart's name, else <release>-<name>.
*/}}
{{- define "nsman.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "nsman.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* nsman.selectorLabels tell this release's pods from any other's. */}}
{{- define "nsman.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nsman.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* nsman.labels are the labels of every object, commonLabels included. */}}
{{- define "nsman.labels" -}}
{{- $labels := dict
  "helm.sh/chart" (printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-")
  "app.kubernetes.io/managed-by" .Release.Service
  "app.kubernetes.io/version" (.Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-")
}}
{{- $labels = merge $labels (include "nsman.selectorLabels" . | fromYaml) }}
{{- toYaml (merge (deepCopy .Values.commonLabels) $labels) }}
{{- end }}

{{/* nsman.metadata is the labels and annotations of an object. */}}
{{- define "nsman.metadata" -}}
labels:
  {{- include "nsman.labels" . | nindent 2 }}
{{- with .Values.commonAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* nsman.image is repository@digest, or repository:tag. */}}
{{- define "nsman.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/* nsman.signingKeySecret is the Secret that holds the webhook signing key, if any. */}}
{{- define "nsman.signingKeySecret" -}}
{{- $key := .Values.webhook.signingKey }}
{{- if and $key.existingSecret $key.value }}
{{- fail "webhook.signingKey: set existingSecret or value, not both" }}
{{- end }}
{{- if $key.existingSecret }}
{{- $key.existingSecret }}
{{- else if $key.value }}
{{- printf "%s-webhook-signing-key" (include "nsman.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* nsman.args are the arguments of nsman sweep that the values set. */}}
{{- define "nsman.args" -}}
- sweep
- --log-format={{ .Values.log.format }}
{{- with .Values.log.level }}
- --log-level={{ . }}
{{- end }}
{{- if .Values.dryRun }}
- --dry-run
{{- end }}
{{- if gt (int .Values.maxActions) 0 }}
- --max-actions={{ int .Values.maxActions }}
{{- end }}
{{- if gt (int .Values.concurrency) 0 }}
- --concurrency={{ int .Values.concurrency }}
{{- end }}
{{- if gt (int .Values.chunkSize) 0 }}
- --chunk-size={{ int .Values.chunkSize }}
{{- end }}
{{- with .Values.claimTTL }}
- {{ printf "--claim-ttl=%s" . | quote }}
{{- end }}
{{- with .Values.maxHold }}
- {{ printf "--max-hold=%s" . | quote }}
{{- end }}
{{- with .Values.stuckAfter }}
- {{ printf "--stuck-after=%s" . | quote }}
{{- end }}
{{- with .Values.argocdNamespace }}
- {{ printf "--argocd-namespace=%s" . | quote }}
{{- end }}
{{- if eq (toString .Values.reclaim) "false" }}
- --reclaim=false
{{- end }}
{{- with .Values.webhook.timeout }}
- {{ printf "--webhook-timeout=%s" . | quote }}
{{- end }}
{{- if kindIs "slice" .Values.trustedNamespaces }}
- {{ printf "--trusted-namespaces=%s" (join "," .Values.trustedNamespaces) | quote }}
{{- end }}
{{- if kindIs "slice" .Values.protectedNamespaces }}
- {{ printf "--protected-namespaces=%s" (join "," .Values.protectedNamespaces) | quote }}
{{- end }}
{{- /* freeze: unset in the values of a release that predates it (--reuse-values). */}}
{{- $freeze := .Values.freeze | default dict }}
{{- range $freeze.ranges }}
- {{ printf "--freeze=%s" . | quote }}
{{- end }}
{{- if include "nsman.freezeConfigMap" . }}
- --freeze-file=/etc/nsman/freeze/calendar
{{- end }}
{{- with $freeze.timeZone }}
- {{ printf "--freeze-time-zone=%s" . | quote }}
{{- end }}
{{- if include "nsman.signingKeySecret" . }}
- --webhook-signing-key-file=/etc/nsman/webhook/key
{{- end }}
{{- with .Values.webhook.allow }}
- {{ printf "--webhook-allow=%s" (join "," .) | quote }}
{{- end }}
{{- with .Values.pushgateway.url }}
- {{ printf "--pushgateway-url=%s" . | quote }}
{{- end }}
{{- with .Values.clusterName }}
- {{ printf "--cluster-name=%s" . | quote }}
{{- end }}
{{- include "nsman.prometheusArgs" . }}
{{- if include "nsman.notifyURLSecret" . }}
- --notify-url-file=/etc/nsman/notify/url
{{- end }}
{{- if or (include "nsman.notifyURLSecret" .) .Values.notify.channels }}
- {{ printf "--notify-format=%s" .Values.notify.format | quote }}
{{- end }}
{{- range $c := .Values.notify.channels }}
- {{ printf "--notify-channel=%s=/etc/nsman/notify-channels/%s/url" $c.name $c.name | quote }}
{{- with $c.format }}
- {{ printf "--notify-channel-format=%s=%s" $c.name . | quote }}
{{- end }}
{{- end }}
{{- if include "nsman.notifySigningKeySecret" . }}
- --notify-signing-key-file=/etc/nsman/notify-signing-key/key
{{- end }}
{{- if include "nsman.linksKeySecret" . }}
- {{ printf "--links-url=%s" .Values.serve.linksURL | quote }}
- --links-signing-key-file=/etc/nsman/links/key
{{- end }}
{{- if gt (int .Values.shards) 1 }}
- --shard-count={{ int .Values.shards }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{- /*
nsman.egressPorts are the TCP ports the NetworkPolicy opens to a server nsman
sends to, as a JSON list: ports when given, else the port of url, else its
scheme's (443 for https, 80 for http). Call it with dict "url" and "ports".
*/}}
{{- define "nsman.egressPorts" -}}
{{- $ports := .ports | default list }}
{{- if not $ports }}
{{- $url := urlParse .url }}
{{- $port := regexFind ":[0-9]+$" $url.host | trimPrefix ":" }}
{{- $ports = list (default (ternary "443" "80" (eq $url.scheme "https")) $port | int) }}
{{- end }}
{{- toJson $ports }}
{{- end }}

{{/*
nsman.patchable is sleep.patchable, checked, as the admission policy's
configuredPatchable: a CEL map from 'group/resource' to what a sleep's
patches may change of that kind ({} for nothing). A field is named as the
policy compares an object: spec.FIELD, metadata.labels,
metadata.annotations.KEY, or another top-level field; never apiVersion,
kind, status, the rest of metadata or nsman's annotations, which no patch
of a sleep may write. A kind is a custom resource's: a sleep's patches
name no kind of Kubernetes' own groups nor of nsman's.
*/}}
{{- define "nsman.patchable" -}}
{{- $entries := list }}
{{- $seen := dict }}
{{- range $i, $p := .Values.sleep.patchable }}
{{- $at := printf "sleep.patchable[%d]" $i }}
{{- if not (kindIs "map" $p) }}
{{- fail (printf "%s: want {group, resource, fields}" $at) }}
{{- end }}
{{- if not (hasKey $p "group") }}
{{- fail (printf "%s: no group (a custom resource's, e.g. helm.toolkit.fluxcd.io)" $at) }}
{{- end }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$" (toString $p.group)) }}
{{- fail (printf "%s: group %q is no custom resource's API group (a sleep's patches name only those)" $at (toString $p.group)) }}
{{- end }}
{{- if or (eq $p.group "k8s.io") (hasSuffix ".k8s.io" $p.group) (eq $p.group "k8s.consol.de") }}
{{- fail (printf "%s: group %q is Kubernetes' or nsman's own: a sleep's patches name only custom resources" $at $p.group) }}
{{- end }}
{{- if not $p.resource }}
{{- fail (printf "%s: no resource (the plural, e.g. helmreleases)" $at) }}
{{- end }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" (toString $p.resource)) }}
{{- fail (printf "%s: resource %q is no resource name (the plural, lower case)" $at (toString $p.resource)) }}
{{- end }}
{{- $key := printf "%s/%s" $p.group $p.resource }}
{{- if hasKey $seen $key }}
{{- fail (printf "%s: %s is listed twice" $at $key) }}
{{- end }}
{{- $_ := set $seen $key true }}
{{- if not (and (kindIs "slice" $p.fields) $p.fields) }}
{{- fail (printf "%s: no fields (what a sleep's patches may change of %s)" $at $key) }}
{{- end }}
{{- $quoted := list }}
{{- range $p.fields }}
{{- $f := toString . }}
{{- $ok := or (regexMatch "^spec\\.[A-Za-z0-9_-]+$" $f) (eq $f "metadata.labels") (regexMatch "^metadata\\.annotations\\.([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$" $f) }}
{{- if and (regexMatch "^[A-Za-z0-9_-]+$" $f) (not (has $f (list "apiVersion" "kind" "metadata" "status"))) }}
{{- $ok = true }}
{{- end }}
{{- if hasPrefix "metadata.annotations.nsman.k8s.consol.de/" $f }}
{{- $ok = false }}
{{- end }}
{{- if not $ok }}
{{- fail (printf "%s.fields: %q may not be patched: name spec.FIELD, metadata.labels, metadata.annotations.KEY (not nsman's) or a top-level field but apiVersion, kind, metadata and status" $at $f) }}
{{- end }}
{{- $quoted = append $quoted (printf "'%s'" $f) }}
{{- end }}
{{- $entries = append $entries (printf "'%s': [%s]" $key (join ", " $quoted)) }}
{{- end }}
{{- printf "{%s}" (join ", " $entries) }}
{{- end }}
