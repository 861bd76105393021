{{/*
nsman.clusterRoleRules are the ClusterRole's rules: the rules of
deploy/base/rbac.yaml, the one place to change them in this chart (a test
checks that the two agree). What a sweep needs, and nothing more: no
wildcards, no Secrets, no CRD writes.
*/}}
{{- define "nsman.clusterRoleRules" -}}
# List the managers and set spec.deactivated; under the original CRD also
# claim them and record their status in an annotation.
- apiGroups: [k8s.consol.de]
  resources: [namespacemanagers]
  verbs: [list, patch]
# Under nsman's CRD, claims and outcomes live in status.
- apiGroups: [k8s.consol.de]
  resources: [namespacemanagers/status]
  verbs: [patch]
# Find targets (one paged list per sweep, and a list by name to read one
# again) and DELETE them; a rule's record of a namespace (claim, outcome)
# is an annotation on it.
- apiGroups: [""]
  resources: [namespaces]
  verbs: [list, patch, delete]
# PODS_SUCCEED and PODS_FAILED checks; what a DELETE reclaims: the CPU
# and memory its pods not finished request; IDLE: the newest pod created;
# a tenant's WEBHOOK to a Service of its own namespace: whether an
# endpoint is a Pod its selector picks (metadata, filtered by the server).
- apiGroups: [""]
  resources: [pods]
  verbs: [list]
# What a DELETE reclaims: the storage its PersistentVolumeClaims request.
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [list]
# A tenant's WEBHOOK to a Service of its own namespace: its type, selector
# and ports (a list by name); what a DELETE reclaims: its LoadBalancers;
# SCALE_DOWN and SLEEP with loadBalancers, and restore: a LoadBalancer
# parked as ClusterIP and back (the admission policy bounds the fields).
- apiGroups: [""]
  resources: [services]
  verbs: [list, patch]
# A tenant's WEBHOOK to a Service of its own namespace: the endpoints to
# dial, each checked against its Pod.
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list]
# PODS_SUCCEED: a Job whose pods match and that has not finished holds
# the check back; PODS_FAILED: a failed Job holds; IDLE: the newest Job
# created.
- apiGroups: [batch]
  resources: [jobs]
  verbs: [list]
# Events on managers: what nsman did, what failed, what it refused.
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create]
# SCALE_DOWN and restore (a workload that changed meanwhile is read again
# with a list by name): Deployments and StatefulSets scaled to zero,
# CronJobs suspended, KEDA ScaledObjects paused at zero, Argo Rollouts
# scaled. Another kind with a scale subresource that a selector names
# needs a rule of its own (docs/managers.md).
- apiGroups: [apps]
  resources: [deployments, statefulsets]
  verbs: [list, patch]
- apiGroups: [batch]
  resources: [cronjobs]
  verbs: [list, patch]
- apiGroups: [keda.sh]
  resources: [scaledobjects]
  verbs: [list, patch]
- apiGroups: [argoproj.io]
  resources: [rollouts]
  verbs: [list, patch]
# IDLE: the newest ReplicaSet (a Deployment rolled out) and
# ControllerRevision (a StatefulSet or DaemonSet rolled out) created (nsman
# asks for their metadata only; list grants the whole objects).
- apiGroups: [apps]
  resources: [replicasets, controllerrevisions]
  verbs: [list]
# OWNER_GONE: the objects that own namespaces, Argo CD's Applications and
# Flux's Kustomizations and HelmReleases (one list of each per sweep, and
# one read again by name); reading them is harmless. A kind whose CRD is
# not installed is skipped.
- apiGroups: [argoproj.io]
  resources: [applications]
  verbs: [get, list]
- apiGroups: [kustomize.toolkit.fluxcd.io]
  resources: [kustomizations]
  verbs: [get, list]
- apiGroups: [helm.toolkit.fluxcd.io]
  resources: [helmreleases]
  verbs: [get, list]
{{- end }}
