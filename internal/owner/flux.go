package owner

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kustomization is Flux's Kustomization, and helmRelease its HelmRelease:
// a namespace names one by the labels each writes on what it applies.
var (
	kustomizations = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	kustomization  = Kind{Name: "Kustomization", Resource: kustomizations,
		Why:    "OWNER_GONE: a Flux Kustomization that owns a namespace (its kustomize.toolkit.fluxcd.io labels)",
		marker: fluxLabels(kustomizations.GroupResource()), deploysTo: fluxDeploysTo(kustomizations.GroupResource())}
	helmReleases = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
	helmRelease  = Kind{Name: "HelmRelease", Resource: helmReleases,
		Why:    "OWNER_GONE: a Flux HelmRelease that owns a namespace (its helm.toolkit.fluxcd.io labels)",
		marker: fluxLabels(helmReleases.GroupResource()), deploysTo: fluxDeploysTo(helmReleases.GroupResource())}
)

// fluxLabels reads the labels Flux's controllers write on each object
// they apply, keyed by their API group: <group>/name and <group>/namespace,
// the name and namespace of the object of resource that applied it (read
// in kustomize-controller's and helm-controller's sources). One
// without the other does not parse.
func fluxLabels(resource schema.GroupResource) func(m Marks) (Named, bool) {
	nameKey, namespaceKey := resource.Group+"/name", resource.Group+"/namespace"
	return func(m Marks) (Named, bool) {
		name, hasName := m.Label(nameKey)
		ns, hasNamespace := m.Label(namespaceKey)
		switch {
		case !hasName && !hasNamespace:
			return Named{}, false
		case !hasNamespace:
			return Named{By: nameKey, Why: fmt.Sprintf("label %s without %s", nameKey, namespaceKey)}, true
		case !hasName:
			return Named{By: nameKey, Why: fmt.Sprintf("label %s without %s", namespaceKey, nameKey)}, true
		}
		ref := Ref{Resource: resource, Namespace: ns, Name: name}
		if err := ref.valid(); err != nil {
			return Named{By: nameKey, Why: fmt.Sprintf("labels %s and %s do not parse: %v", nameKey, namespaceKey, err)}, true
		}
		return Named{Ref: ref, By: nameKey}, true
	}
}

// fluxDeploysTo reports whether an object of resource deploys to the
// namespace m marks: its spec.targetNamespace names it, or the namespace
// carries the object's own labels (it applied the namespace).
func fluxDeploysTo(resource schema.GroupResource) func(it *Item, m Marks) bool {
	return func(it *Item, m Marks) bool {
		if it.Spec.TargetNamespace == m.Namespace {
			return true
		}
		named, present := fluxLabels(resource)(m)
		return present && named.Names() && named.Ref.Namespace == it.Metadata.Namespace && named.Ref.Name == it.Metadata.Name
	}
}
