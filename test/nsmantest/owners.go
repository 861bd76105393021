package nsmantest

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/owner"
)

// OwnerObject is an object of the owner kind k named namespace/name that
// the kind's real CRD (InstallGitOpsCRDs) admits, with the fields its
// schema requires and no more: an Argo CD Application of project default
// deploying a Git path into this cluster (spec.destination.server; a test
// that means CreateNamespace sets spec.destination.namespace and
// spec.syncPolicy.syncOptions), a Flux Kustomization of a GitRepository,
// a Flux HelmRelease of a chart from a HelmRepository. No controller runs,
// so none of them acts.
func OwnerObject(k owner.Kind, namespace, name string) *unstructured.Unstructured {
	var spec map[string]any
	switch k.Name {
	case "Application":
		spec = map[string]any{
			"project":     "default",
			"destination": map[string]any{"server": "https://kubernetes.default.svc"},
			"source":      map[string]any{"repoURL": "https://git.invalid/previews.git", "path": "app", "targetRevision": "HEAD"},
		}
	case "Kustomization":
		spec = map[string]any{
			"interval":  "5m",
			"prune":     true,
			"path":      "./app",
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "previews"},
		}
	case "HelmRelease":
		spec = map[string]any{
			"interval": "5m",
			"chart": map[string]any{"spec": map[string]any{
				"chart":     "app",
				"sourceRef": map[string]any{"kind": "HelmRepository", "name": "previews"},
			}},
		}
	default:
		panic(fmt.Sprintf("nsmantest.OwnerObject: no object of owner kind %s", k.Name))
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": k.Resource.GroupVersion().String(),
		"kind":       k.Name,
		"metadata":   map[string]any{"namespace": namespace, "name": name},
		"spec":       spec,
	}}
}
