package explain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/pager"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/owner"
)

// An owner's presence, as explain read it.
const (
	OwnerExists  = "exists"
	OwnerGone    = "gone"
	OwnerUnknown = "unknown"
)

// Owner is who owns the namespace as nsman's sweep reads it
// (docs/gitops.md): the first marker the namespace carries, else an Argo CD
// Application in --argocd-namespace that creates it (CreateNamespace=true).
// The owner a rule's record remembers is not read.
type Owner struct {
	// Ref is <resource>.<group>/<namespace>/<name>; empty when the marker
	// there names no owner (Why says why).
	Ref string `json:"ref,omitempty"`
	// By is the marker's key, or owner.CreatedBy.
	By string `json:"by"`
	// Presence is OwnerExists, OwnerGone or OwnerUnknown.
	Presence string `json:"presence"`
	// Why says why Presence is OwnerUnknown.
	Why string `json:"why,omitempty"`
}

// The bounds of explain's reads of owners and rules: each list reads pages
// of pageSize objects, at most maxListed objects, within readTimeout; each
// read by name within readTimeout.
const (
	pageSize    = 50
	maxListed   = 10_000
	readTimeout = 30 * time.Second
)

// errTooMany ends a list past maxListed objects.
var errTooMany = errors.New("too many objects")

// owner reads who owns ns, as a sweep would: the first marker decides,
// even when it names none.
func (r *Report) owner(ctx context.Context, c cluster.Clients, ns *corev1.Namespace, argoCD string) {
	named := marksOf(ns, argoCD).Owner()
	switch {
	case named.Names():
		o := Owner{Ref: named.Ref.String(), By: named.By}
		o.Presence, o.Why = presence(ctx, c.Kube.Discovery(), c.Metadata, named.Ref)
		r.Owner = &o
	case named.Why != "":
		r.Owner = &Owner{By: named.By, Presence: OwnerUnknown, Why: named.Why}
	default:
		r.Owner = r.creator(ctx, c.Dynamic, ns.Name, argoCD)
	}
}

// marksOf is what ns carries that may name its owner, its owner
// annotations cut as a sweep cuts them.
func marksOf(ns *corev1.Namespace, argoCD string) owner.Marks {
	annotations := map[string]string{}
	for _, k := range owner.Annotations() {
		if v, ok := ns.Annotations[k]; ok {
			annotations[k] = v[:min(len(v), owner.MaxMarker+1)]
		}
	}
	return owner.Marks{Namespace: ns.Name, Annotations: annotations, ArgoCDNamespace: argoCD,
		Label: func(k string) (string, bool) { v, ok := ns.Labels[k]; return v, ok }}
}

// presence reads owner ref by name, as metadata only: whatever kind a
// tenant's marker names (a Secret of another namespace), nothing but the
// object's metadata is read, with the caller's credentials.
func presence(ctx context.Context, disco discovery.DiscoveryInterface, md metadata.Interface, ref owner.Ref) (string, string) {
	gvr, why := served(disco, ref.Resource)
	if why != "" {
		return OwnerUnknown, why
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	_, err := md.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		return OwnerExists, ""
	case apierrors.IsNotFound(err) && !notServed(err):
		return OwnerGone, ""
	case apierrors.IsNotFound(err):
		return OwnerUnknown, fmt.Sprintf("%s is not served by the cluster", ref.Resource)
	case apierrors.IsForbidden(err):
		return OwnerUnknown, fmt.Sprintf("you may not get %s: %v", ref.Resource, err)
	}
	return OwnerUnknown, fmt.Sprintf("get %s: %v", ref, err)
}

// notServed reports whether err, a 404, is the API server's answer to a
// path nothing serves (its body no Status: the kind went between discovery
// and the read) rather than to an object not found.
func notServed(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	return slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool {
		return c.Type == metav1.CauseTypeUnexpectedServerResponse
	})
}

// served is where the cluster serves resource: a registered owner kind at
// the version a sweep reads, any other kind at its group's preferred
// version, as discovery says; why says why no owner can be read there.
func served(disco discovery.DiscoveryInterface, resource schema.GroupResource) (schema.GroupVersionResource, string) {
	gv, why := servedVersion(disco, resource)
	if why != "" {
		return schema.GroupVersionResource{}, why
	}
	list, err := disco.ServerResourcesForGroupVersion(gv.String())
	switch {
	case apierrors.IsNotFound(err):
		return schema.GroupVersionResource{}, fmt.Sprintf("%s is not served by the cluster (%s is not)", resource, gv)
	case err != nil:
		return schema.GroupVersionResource{}, fmt.Sprintf("discover %s: %v", gv, err)
	}
	i := slices.IndexFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == resource.Resource })
	switch {
	case i < 0:
		return schema.GroupVersionResource{}, fmt.Sprintf("%s is not served by the cluster", resource)
	case !list.APIResources[i].Namespaced:
		return schema.GroupVersionResource{}, fmt.Sprintf("names %s, which is not namespaced", resource)
	}
	return gv.WithResource(resource.Resource), ""
}

// servedVersion is the version of resource's group served kinds are read
// at.
func servedVersion(disco discovery.DiscoveryInterface, resource schema.GroupResource) (schema.GroupVersion, string) {
	if k, ok := owner.KindOf(resource); ok {
		return k.Resource.GroupVersion(), ""
	}
	groups, err := disco.ServerGroups()
	if err != nil {
		return schema.GroupVersion{}, fmt.Sprintf("discover the API groups: %v", err)
	}
	for _, g := range groups.Groups {
		if g.Name == resource.Group {
			return schema.GroupVersion{Group: g.Name, Version: g.PreferredVersion.Version}, ""
		}
	}
	return schema.GroupVersion{}, fmt.Sprintf("%s is not served by the cluster (no API group %q)", resource, resource.Group)
}

// creator is the owner of namespace no marker names: the first by name of
// the Applications in argoCD that create it, which exists (it was just
// listed); nil when none does. A list that fails, other than of a kind not
// installed, is said in Unlisted.
func (r *Report) creator(ctx context.Context, dyn dynamic.Interface, namespace, argoCD string) *Owner {
	for _, k := range owner.Kinds() {
		if !k.CreatesNamespaces() {
			continue
		}
		names, err := creators(ctx, dyn, k, namespace, argoCD)
		switch {
		case len(names) > 0:
			ref := owner.Ref{Resource: k.Resource.GroupResource(), Namespace: argoCD, Name: slices.Min(names)}
			return &Owner{Ref: ref.String(), By: owner.CreatedBy, Presence: OwnerExists}
		case err == nil, apierrors.IsNotFound(err):
		case errors.Is(err, errTooMany):
			r.Unlisted = append(r.Unlisted, Unlisted{What: k.Ref() + " in " + argoCD, Error: fmt.Sprintf("more than %d: explain reads no more, and an owner that created the namespace may be among the rest", maxListed)})
		default:
			r.Unlisted = append(r.Unlisted, Unlisted{What: k.Ref() + " in " + argoCD, Error: err.Error()})
		}
	}
	return nil
}

// creators are the names of the objects of kind k in argoCD that create
// namespace. The list is read in pages of pageSize, each decoded whole
// (the API server bounds an object at some 1.5 MiB), of each object only
// owner.Item's fields kept, at most maxListed objects, within readTimeout.
func creators(ctx context.Context, dyn dynamic.Interface, k owner.Kind, namespace, argoCD string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return dyn.Resource(k.Resource).Namespace(argoCD).List(ctx, opts)
	})
	p.PageSize, p.PageBufferSize = pageSize, 0
	var names []string
	read := 0
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		if read++; read > maxListed {
			return errTooMany
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("unexpected list item %T", obj)
		}
		var it owner.Item
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &it); err != nil {
			return nil // not an Application as Argo CD writes one: it creates nothing
		}
		if k.Creates(&it) == namespace {
			names = append(names, u.GetName())
		}
		return nil
	})
	return names, err
}

// String is o as explain's text report says it: the ref, the marker that
// named it and its presence (and why it is unknown), or the marker that
// names none, and why.
func (o Owner) String() string {
	switch {
	case o.Ref == "":
		return o.By + " names none: " + o.Why
	case o.Why != "":
		return o.Ref + " (by " + o.By + "): " + o.Presence + ": " + o.Why
	}
	return o.Ref + " (by " + o.By + "): " + o.Presence
}
