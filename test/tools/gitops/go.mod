// Module gitops pins the GitOps projects whose CRDs nsman's tests install
// (Argo CD's Application, Flux's Kustomization and HelmRelease): their
// release trees, downloaded through the Go module proxy and checked against
// go.sum. It builds nothing, so go mod tidy would drop these requirements:
// it is not among the Makefile's TOOL_MODULES. crds lists the files
// test/tools/build.sh copies from each.
module github.com/nsman/nsman/test/tools/gitops

go 1.26.0

require (
	github.com/argoproj/argo-cd/v3 v3.5.7
	github.com/fluxcd/helm-controller v1.4.3
	github.com/fluxcd/kustomize-controller v1.9.6
)
