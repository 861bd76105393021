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
	// marker reads the marker by which a namespace names an owner of this
	// kind (see Marks.named); nil: only policy.OwnerAnnotation does.
	marker func(m Marks) (named Named, present bool)
	// creates is the namespace an object of this kind creates, "" for none
	// (see Kind.Creates); nil: objects of this kind create none.
	creates func(it *Item) string
	// deploysTo reports whether it deploys to the namespace m marks (see
	// Kind.DeploysTo).
	deploysTo func(it *Item, m Marks) bool
}

// DeploysTo reports whether it, an object of kind k read whole, deploys to
// the namespace whose markers are m: the one object a DELETE via owner
// deletes through, so that a tenant's marker naming another's object never
// deletes it.
func (k Kind) DeploysTo(it *Item, m Marks) bool {
	return k.deploysTo != nil && k.deploysTo(it, m)
}

// Ref is <resource>.<group>, the way policy.Owner.Ref and
// policy.OwnerAnnotation name the kind.
func (k Kind) Ref() string { return k.Resource.GroupResource().String() }

// Creates is the namespace it, an object of kind k, creates and so owns
// (an Argo CD Application with CreateNamespace=true), "" for none.
func (k Kind) Creates(it *Item) string {
	if k.creates == nil {
		return ""
	}
	return k.creates(it)
}

// CreatesNamespaces reports whether k's objects may create a namespace
// (see Creates), which a sweep then reads of each.
func (k Kind) CreatesNamespaces() bool { return k.creates != nil }

// ReadsSpec reports whether a sweep reads a field of the spec of k's
// objects (Item.Spec), what Creates reads: else it lists them as metadata
// only.
func (k Kind) ReadsSpec() bool { return k.creates != nil }

// known are the owner kinds, each registered once in its home, in the
// order a sweep lists them and a namespace's markers are read.
var known = []Kind{application, kustomization, helmRelease}

// Kinds are the owner kinds, in their order.
func Kinds() []Kind { return slices.Clone(known) }

// KindOf is the registered owner kind of resource, and whether there is
// one: a kind not registered that policy.OwnerAnnotation names is found by
// discovery.
func KindOf(resource schema.GroupResource) (Kind, bool) {
	i := slices.IndexFunc(known, func(k Kind) bool { return k.Resource.GroupResource() == resource })
	if i < 0 {
		return Kind{}, false
	}
	return known[i], true
}

// Permission is one verb on one owner kind that reading it needs,
// cluster-wide.
type Permission struct {
	Verb, Group, Resource, Why string
}

// DeleteGrant says how an installation grants a DELETE via owner the
// deletion of owners (DeletePermissions), which nsman's RBAC leaves out by
// default.
const DeleteGrant = "grant it with the chart value owners.deleteVia=true, or the kustomize component deploy/components/owner-delete"

// DeletePermissions are what a DELETE via owner needs beyond reading: to
// delete an owner of each kind.
func DeletePermissions() []Permission {
	var out []Permission
	for _, k := range known {
		out = append(out, Permission{"delete", k.Resource.Group, k.Resource.Resource, "DELETE via owner: delete the " + k.Name + " that deploys to a namespace before the namespace"})
	}
	return out
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
