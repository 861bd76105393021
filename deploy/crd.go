// Package deploy holds nsman's manifests. The binary embeds its CRD, which
// nsman doctor compares with the one installed; the tests check that the
// repository names one image, one way, and one license, and that a
// release's archives and krew manifest (krew/nsman.yaml) are what krew
// installs.
package deploy

import _ "embed"

// CRD is nsman's NamespaceManager CRD, base/crd.yaml, as this binary knows
// it.
//
//go:embed base/crd.yaml
var CRD []byte

// MinKubernetes is the oldest Kubernetes nsman's install runs on: the
// admission policy (base/admission-policy.yaml) is GA from 1.30, and the
// CRD's validation rules need no later release. The chart's kubeVersion
// says the same.
const MinKubernetes = "1.30"
