// Package nsmantest drives nsman on a control plane from package cluster:
// it installs a CRD and nsman's RBAC, applies manifests, runs nsman sweep in
// process as nsman's ServiceAccount and decodes its JSON report, and
// receives webhooks on loopback.
package nsmantest
