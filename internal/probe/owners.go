package probe

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/owner"
	"github.com/nsman/nsman/policy"
)

// MaxOwners bounds the objects of one kind a sweep's owner index reads:
// a name past it is of an owner whose presence is unknown, never gone.
// An object costs the index a hash of its namespace and name, some 23
// bytes (see ownerList.present); one that creates a namespace, its ref.
const MaxOwners = 50_000

// MaxOtherOwnerKinds bounds the kinds, besides owner.Kinds, that
// policy.OwnerAnnotation may have a sweep list (once each; a kind the
// cluster does not serve costs no list and is not counted): a tenant
// naming more makes the owners of those others unknown, not a list each.
const MaxOtherOwnerKinds = 3

// Owners is the sweep's owner index, which answers decide.Owners: who owns
// a namespace, as its markers name it (owner.Marks), an Argo CD
// Application made it (CreateNamespace), or its record remembers, and
// whether that owner exists. Each kind is listed once per sweep,
// cluster-wide, at its first need, within --claim-ttl, and at most
// MaxOwners of its objects are read. It is safe for concurrent use.
type Owners struct {
	reads Reads
	// argoCD is --argocd-namespace: where an Application named by app
	// name alone lives, and the Applications that own what they create.
	argoCD string
	// mu guards lists, the index of each kind asked about, and others, how
	// many kinds besides owner.Kinds it lists.
	mu     sync.Mutex
	lists  map[schema.GroupResource]*ownerList
	others int
	// found is discovery's answer, asked once, for a kind of
	// policy.OwnerAnnotation that owner.Kinds does not register.
	discovered sync.Once
	found      map[schema.GroupResource]foundKind
	failed     map[string]error
	err        error
	// seed is the sweep's own, so that no tenant can name an object whose
	// key collides with another's.
	seed maphash.Seed
}

// foundKind is a kind discovery found: where it is served, and whether a
// namespace's owner can be one.
type foundKind struct {
	resource   schema.GroupVersionResource
	namespaced bool
}

// ownerList is one kind's objects, as the sweep listed them.
type ownerList struct {
	once sync.Once
	// present are the objects found, by a hash of namespace/name (see
	// Owners.key): 23 bytes an object rather than the 66 to 178 of its
	// names (measured at 50,000). A collision, one in 2^64, makes a gone
	// owner present, on which nothing acts.
	present map[uint64]struct{}
	// creates are the Applications that create each namespace, by ref.
	creates map[string][]string
	// why says why an object not found may exist all the same: the kind is
	// not served, may not be listed, its list failed or was cut.
	why string
}

// has reports whether the object of key was found.
func (l *ownerList) has(key uint64) bool {
	_, ok := l.present[key]
	return ok
}

// NewOwners returns the owner index of a sweep that reads with reads; an
// app name without a namespace names an Application in argoCDNamespace.
func NewOwners(reads Reads, argoCDNamespace string) *Owners {
	return &Owners{reads: reads, argoCD: argoCDNamespace, lists: map[schema.GroupResource]*ownerList{}, seed: maphash.MakeSeed()}
}

// key is the key of object namespace/name in an ownerList's present.
func (x *Owners) key(namespace, name string) uint64 {
	var h maphash.Hash
	h.SetSeed(x.seed)
	h.WriteString(namespace)
	h.WriteByte('/')
	h.WriteString(name)
	return h.Sum64()
}

// Of is ns's owner (see decide.Owners): the one its first marker names
// (unknown, with the reason, when that marker names none: it does not
// parse, or names another object), else an Application in Argo CD's
// namespace that creates it, else remembered, the ref its record
// remembers; nil when none is.
func (x *Owners) Of(ctx context.Context, ns cluster.Namespace, remembered string) *policy.Owner {
	named := ns.Marks(x.argoCD).Owner()
	switch {
	case named.Names():
		return x.presence(ctx, named.Ref, named.By)
	case named.Why != "":
		return &policy.Owner{By: named.By, Presence: policy.OwnerUnknown, Why: named.Why}
	}
	for _, k := range owner.Kinds() {
		if !k.CreatesNamespaces() {
			continue
		}
		if refs := x.list(ctx, k.Resource.GroupResource()).creates[ns.Name]; len(refs) > 0 {
			return &policy.Owner{Ref: refs[0], By: owner.CreatedBy, Presence: policy.OwnerPresent}
		}
	}
	if remembered == "" {
		return nil
	}
	ref, err := owner.ParseRef(remembered)
	if err != nil {
		return &policy.Owner{Ref: remembered, By: policy.OwnerRemembered, Presence: policy.OwnerUnknown, Why: fmt.Sprintf("the owner remembered does not parse: %v", err)}
	}
	return x.presence(ctx, ref, policy.OwnerRemembered)
}

// Now reads owner ref (as Of answered it) again by name, as metadata,
// within the time a sweep gives a read of one namespace: what acts on an
// owner's going (a DELETE) asks it just before it acts, since the owner
// may have come back since its kind was listed. Present or gone, or
// unknown with why (a ref that does not parse, a kind not served, or a
// read refused or failed).
func (x *Owners) Now(ctx context.Context, ref string) (policy.OwnerPresence, string) {
	r, err := owner.ParseRef(ref)
	if err != nil {
		return policy.OwnerUnknown, err.Error()
	}
	kind, registered := owner.KindOf(r.Resource)
	if !registered {
		found, why := x.resolve(r.Resource)
		if why != "" {
			return policy.OwnerUnknown, why
		}
		kind.Resource = found.resource
	}
	ctx, cancel := context.WithTimeout(ctx, x.reads.NamespaceTimeout())
	defer cancel()
	exists, err := x.reads.OwnerExists(ctx, kind.Resource, r.Namespace, r.Name)
	switch {
	case err != nil:
		return policy.OwnerUnknown, err.Error()
	case exists:
		return policy.OwnerPresent, ""
	}
	return policy.OwnerGone, ""
}

// presence is the owner ref, named by by, as its kind's list found it.
func (x *Owners) presence(ctx context.Context, ref owner.Ref, by string) *policy.Owner {
	l := x.list(ctx, ref.Resource)
	o := &policy.Owner{Ref: ref.String(), By: by, Presence: policy.OwnerGone}
	switch {
	case l.has(x.key(ref.Namespace, ref.Name)):
		o.Presence = policy.OwnerPresent
	case l.why != "":
		o.Presence, o.Why = policy.OwnerUnknown, l.why
	}
	return o
}

// list returns the index of kind resource, listed at the first ask.
func (x *Owners) list(ctx context.Context, resource schema.GroupResource) *ownerList {
	x.mu.Lock()
	l := x.lists[resource]
	if l == nil {
		l = &ownerList{}
		x.lists[resource] = l
	}
	x.mu.Unlock()
	l.once.Do(func() { x.fill(ctx, resource, l) })
	return l
}

// Prefetch lists the kinds whose objects create namespaces (Argo CD's
// Applications), which Of asks about for every namespace no marker names:
// a sweep starts it beside its namespaces' list once a rule that weighs
// owners is listed, rather than after (10,000 namespaces and Applications:
// the two lists one after the other were most of a no-op sweep). Of then
// answers from what it listed; no other kind is listed ahead.
func (x *Owners) Prefetch(ctx context.Context) {
	for _, k := range owner.Kinds() {
		if k.CreatesNamespaces() {
			x.list(ctx, k.Resource.GroupResource())
		}
	}
}

// another counts one more kind listed besides owner.Kinds, and reports
// whether it is within MaxOtherOwnerKinds.
func (x *Owners) another() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.others == MaxOtherOwnerKinds {
		return false
	}
	x.others++
	return true
}

// errTooManyOwners ends a list past MaxOwners objects.
var errTooManyOwners = errors.New("too many owners")

// fill lists kind resource into l, bounded by --claim-ttl and MaxOwners.
func (x *Owners) fill(ctx context.Context, resource schema.GroupResource, l *ownerList) {
	kind, registered := owner.KindOf(resource)
	if !registered {
		found, why := x.resolve(resource)
		if why == "" && !x.another() {
			why = fmt.Sprintf("owners of more than %d kinds nsman does not know are named in one sweep: %s is not read", MaxOtherOwnerKinds, resource)
		}
		if why != "" {
			l.why = why
			return
		}
		kind = owner.Kind{Name: resource.String(), Resource: found.resource}
	}
	ctx, cancel := context.WithTimeout(ctx, x.reads.ClaimTTL)
	defer cancel()
	l.present, l.creates = map[uint64]struct{}{}, map[string][]string{}
	read := 0
	err := x.reads.EachOwner(ctx, kind.Resource, kind.ReadsSpec(), func(it *owner.Item) error {
		if read++; read > MaxOwners {
			return errTooManyOwners
		}
		m := &it.Metadata
		l.present[x.key(m.Namespace, m.Name)] = struct{}{}
		// An Application anywhere but Argo CD's own namespace may be a
		// tenant's (apps in any namespace): its destination would make it
		// the owner of another tenant's namespace, whose going OWNER_GONE
		// would then act on.
		if ns := kind.Creates(it); ns != "" && m.Namespace == x.argoCD {
			l.creates[ns] = append(l.creates[ns], owner.Ref{Resource: resource, Namespace: m.Namespace, Name: m.Name}.String())
		}
		return nil
	})
	for _, refs := range l.creates {
		slices.Sort(refs)
	}
	switch {
	case err == nil:
	case registered && apierrors.IsNotFound(err):
		l.why = fmt.Sprintf("%s (%s) is not installed: the cluster does not serve it", kind.Name, kind.Resource)
	case errors.Is(err, errTooManyOwners):
		l.why = fmt.Sprintf("more than %d %s in the cluster: a sweep reads no more", MaxOwners, resource)
	case apierrors.IsForbidden(err):
		l.why = fmt.Sprintf("nsman may not list %s: %v", resource, err)
	default:
		l.why = fmt.Sprintf("list %s: %v", resource, err)
		x.reads.Log.Warn("owners unknown", "error", l.why)
	}
}

// resolve is where the cluster serves resource, a kind owner.Kinds does
// not register, as discovery says, asked once per sweep; why says why no
// namespace's owner can be one of it.
func (x *Owners) resolve(resource schema.GroupResource) (foundKind, string) {
	x.discovered.Do(func() {
		lists, err := discovery.ServerPreferredResources(x.reads.Clients.Kube.Discovery())
		x.found, x.err = map[schema.GroupResource]foundKind{}, err
		if failed, partial := discovery.GroupDiscoveryFailedErrorGroups(err); partial {
			x.failed, x.err = map[string]error{}, nil
			for gv, err := range failed {
				x.failed[gv.Group] = err
			}
		}
		for _, list := range lists {
			gv, err := schema.ParseGroupVersion(list.GroupVersion)
			if err != nil {
				continue
			}
			for _, r := range list.APIResources {
				if slices.Contains(r.Verbs, "list") {
					x.found[gv.WithResource(r.Name).GroupResource()] = foundKind{gv.WithResource(r.Name), r.Namespaced}
				}
			}
		}
	})
	found, ok := x.found[resource]
	switch {
	case ok && !found.namespaced:
		return found, fmt.Sprintf("names %s, which is not namespaced", resource)
	case ok:
		return found, ""
	case x.failed[resource.Group] != nil:
		return found, fmt.Sprintf("discovery of %s failed: %v", resource.Group, x.failed[resource.Group])
	case x.err != nil:
		return found, fmt.Sprintf("discovery failed: %v", x.err)
	}
	return found, fmt.Sprintf("names a kind that does not exist: the cluster serves no %s that can be listed", resource)
}
