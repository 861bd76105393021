// Package owner is each kind of object that owns a namespace for nsman,
// one home per kind (the GitOps tools' Applications, Kustomizations and
// HelmReleases): where it is served, how a namespace names one, what a sweep
// reads of each and what reading it needs. It makes no request.
package owner

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind is one kind of owner nsman reads in one list per sweep.
type Kind struct {
	// Name is the kind's name (Application).
	Name     string
	Resource schema.GroupVersionResource
	// Why nsman reads it, as nsman doctor says it.
	Why string
}

// Ref is <resource>.<group>, the way policy.Owner.Ref and
// policy.OwnerAnnotation name the kind.
func (k Kind) Ref() string { return k.Resource.GroupResource().String() }

var (
	application = Kind{Name: "Application", Resource: schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"},
		Why: "OWNER_GONE: an Argo CD Application that owns a namespace (its tracking id, or CreateNamespace)"}
	kustomization = Kind{Name: "Kustomization", Resource: schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"},
		Why: "OWNER_GONE: a Flux Kustomization that owns a namespace (its kustomize.toolkit.fluxcd.io labels)"}
	helmRelease = Kind{Name: "HelmRelease", Resource: schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"},
		Why: "OWNER_GONE: a Flux HelmRelease that owns a namespace (its helm.toolkit.fluxcd.io labels)"}
)

// known are the owner kinds, each registered once, in the order a sweep
// lists them.
var known = []Kind{application, kustomization, helmRelease}

// Kinds are the owner kinds, in their order.
func Kinds() []Kind { return slices.Clone(known) }

// Permission is one verb on one owner kind that reading it needs,
// cluster-wide.
type Permission struct {
	Verb, Group, Resource, Why string
}

// Permissions are what reading the owner kinds needs: to list each, and
// to get one (an owner named by a marker is read again by name before a
// DELETE acts on its going).
func Permissions() []Permission {
	var out []Permission
	for _, k := range known {
		out = append(out, Permission{"get", k.Resource.Group, k.Resource.Resource, k.Why}, Permission{"list", k.Resource.Group, k.Resource.Resource, k.Why})
	}
	return out
}
