package probe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/workload"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/policy/patch"
)

// Kind is a kind of workload nsman puts to sleep and wakes, and the way it
// does.
type Kind struct {
	// Name is the kind's name as its API serves it: Deployment, Rollout.
	Name     string
	Resource schema.GroupVersionResource
	// Found is set for a kind found by discovery, whose objects controlled
	// by another (a Deployment's ReplicaSets) are their controller's to
	// scale, and left alone.
	Found bool
	// Way is how it sleeps, as its home in internal/workload says.
	Way workload.Way
	// AwakeFields is the field selector that lists only the objects that
	// may be awake ("": all), as its home registers it.
	AwakeFields string
	// Parked: a kind a sleep's parameter adds (see workload.Parked), which
	// no selector names.
	Parked bool
}

// Selection is a kind and the labels its workloads must carry (none: all),
// and the field selector they must match (none: all).
type Selection struct {
	Kind   Kind
	Labels map[string]string
	Fields string
}

// knownKinds are the kinds internal/workload registers, read without
// discovery; defaultSelections are what a SCALE_DOWN without selectors
// scales, as the original operator did.
var knownKinds, defaultSelections = func() (map[string]Kind, []Selection) {
	byName := map[string]Kind{}
	var defaults []Selection
	for _, k := range workload.Kinds() {
		byName[k.Name] = Kind{Name: k.Name, Resource: k.Resource, Way: k.Way}
		if k.Default {
			defaults = append(defaults, Selection{Kind: byName[k.Name]})
		}
	}
	return byName, defaults
}()

// parkedKinds are the parked kinds internal/workload registers, and what
// parks each.
var parkedKinds = func() (out []parkedKind) {
	for _, k := range workload.Parked() {
		out = append(out, parkedKind{Kind{Name: k.Name, Resource: k.Resource, Way: k.Way, AwakeFields: k.AwakeFields, Parked: true}, k.Parks})
	}
	return out
}()

// parkedKind is a parked kind and what parks it.
type parkedKind struct {
	kind  Kind
	parks func(policy.SleepTo) bool
}

// ToSleep is selections with the parked kinds a sleep to to parks, each
// listed as far as its AwakeFields: only those may be put to sleep.
func ToSleep(selections []Selection, to policy.SleepTo) []Selection {
	out := slices.Clone(selections)
	for _, p := range parkedKinds {
		if p.parks(to) {
			out = append(out, Selection{Kind: p.kind, Fields: p.kind.AwakeFields})
		}
	}
	return out
}

// ToWake is selections with every parked kind, all of their objects: a
// wake, and nsman restore, bring back what a record says whatever the
// policy says now.
func ToWake(selections []Selection) []Selection {
	out := slices.Clone(selections)
	for _, p := range parkedKinds {
		out = append(out, Selection{Kind: p.kind})
	}
	return out
}

// KnownKind is the kind of policy.KnownKinds named name, and whether it is
// one.
func KnownKind(name string) (Kind, bool) {
	k, ok := knownKinds[name]
	return k, ok
}

// Kinds resolves selectors' kinds, asking the cluster's discovery once,
// when a selector names a kind that is none of policy.KnownKinds or every
// kind is asked for (All), and whether nsman may patch each kind found,
// once per kind. Its zero value is ready; it is safe for concurrent use.
type Kinds struct {
	once  sync.Once
	found []Kind
	// err is discovery's: partial (discovery.ErrGroupDiscoveryFailed, the
	// groups that failed named in it) or whole.
	err error
	// served are the resources discovery found, of every version.
	served map[schema.GroupVersionResource]bool
	// custom are the namespaced kinds of the custom resources' groups
	// (see patch.Custom) that can be listed and patched, in their group's
	// preferred version, less those with a scale subresource (found):
	// the kinds a sleep's patches may name.
	custom []Kind
	// denied are the kinds found that the sweep may not list (see Deny).
	denied sync.Map
	// reviews are the access reviews of the kinds found, by
	// schema.GroupResource: a *review each.
	reviews sync.Map
}

// review is one kind's access review, made once per sweep.
type review struct {
	once    sync.Once
	allowed bool
}

// Deny drops the kind found of resource from All for the rest of the sweep:
// the caller may not list it, and asking again would only be refused
// again.
func (k *Kinds) Deny(resource schema.GroupResource) { k.denied.Store(resource, true) }

// Resolve returns the selections of selectors, defaultSelections for none,
// or an error naming every selector whose kind the cluster does not serve
// with a scale subresource: a SCALE_DOWN resolves all of them before it
// writes anything.
func (k *Kinds) Resolve(kube kubernetes.Interface, selectors []policy.Selector) ([]Selection, error) {
	if len(selectors) == 0 {
		return defaultSelections, nil
	}
	out := make([]Selection, 0, len(selectors))
	var errs []error
	for i, sel := range selectors {
		kind, ok := knownKinds[sel.Kind]
		if !ok {
			var err error
			if kind, err = k.find(kube, sel.Kind); err != nil {
				errs = append(errs, fmt.Errorf("selectors[%d]: %w", i, err))
				continue
			}
		}
		out = append(out, Selection{Kind: kind, Labels: sel.Labels})
	}
	return out, errors.Join(errs...)
}

// All is every kind nsman may have put to sleep in the cluster: the known
// ones the cluster serves (all of them when discovery failed wholly) and
// each kind with a scale subresource discovery finds that nsman may patch
// everywhere (see mayPatch), less those denied. Discovery that failed for
// some groups (an APIService whose backend is down) fails those alone:
// unavailable names them (group/version, sorted), and their kinds are
// left out; err is discovery's failure when it failed wholly.
func (k *Kinds) All(ctx context.Context, kube kubernetes.Interface) (selections []Selection, unavailable []string, err error) {
	found, err := k.discover(kube)
	if failed, partial := discovery.GroupDiscoveryFailedErrorGroups(err); partial {
		for gv := range failed {
			unavailable = append(unavailable, gv.String())
		}
		slices.Sort(unavailable)
		err = nil
	}
	out := make([]Selection, 0, len(knownKinds)+len(found))
	for _, known := range workload.Kinds() {
		if kind := knownKinds[known.Name]; err != nil || k.served[kind.Resource] {
			out = append(out, Selection{Kind: kind})
		}
	}
	var candidates []Kind
	for _, kind := range found {
		if _, denied := k.denied.Load(kind.Resource.GroupResource()); denied {
			continue
		}
		if !slices.ContainsFunc(out, func(s Selection) bool { return s.Kind.Resource.GroupResource() == kind.Resource.GroupResource() }) {
			candidates = append(candidates, kind)
		}
	}
	// The reviews are asked side by side: a sweep waits for one, not for
	// one per kind found.
	allowed := make([]bool, len(candidates))
	var wg sync.WaitGroup
	for i, kind := range candidates {
		wg.Go(func() { allowed[i] = k.mayPatch(ctx, kube, kind) })
	}
	wg.Wait()
	for i, kind := range candidates {
		if allowed[i] {
			out = append(out, Selection{Kind: kind})
		}
	}
	return out, unavailable, err
}

// mayPatch reports whether nsman may patch kind's objects, asking the API
// server once per kind per sweep: a kind it may list but not patch (the
// shipped ClusterRole's ReplicaSets) is not offered for sleep, where every
// patch would be refused. A review that fails offers the kind: a wake must
// not miss a kind slept, and a patch refused is a warning of the entry.
func (k *Kinds) mayPatch(ctx context.Context, kube kubernetes.Interface, kind Kind) bool {
	v, _ := k.reviews.LoadOrStore(kind.Resource.GroupResource(), &review{})
	r := v.(*review)
	r.once.Do(func() {
		allowed, err := cluster.MayPatchEverywhere(ctx, kube, kind.Resource)
		r.allowed = allowed || err != nil
	})
	return r.allowed
}

// find is the kind with a scale subresource that name (Kind or Kind.group)
// names, the kind in any letter case.
func (k *Kinds) find(kube kubernetes.Interface, name string) (Kind, error) {
	found, err := k.discover(kube)
	kind, group, grouped := strings.Cut(name, ".")
	var matches []Kind
	for _, f := range found {
		if strings.EqualFold(f.Name, kind) && (!grouped || f.Resource.Group == group) {
			matches = append(matches, f)
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0], nil
	case len(matches) > 1:
		names := make([]string, len(matches))
		for i, m := range matches {
			names[i] = m.Name + "." + m.Resource.Group
		}
		return Kind{}, fmt.Errorf("kind %s is served by several API groups (%s): name one as Kind.group", name, strings.Join(names, ", "))
	case err != nil:
		return Kind{}, fmt.Errorf("kind %s: discovery failed: %w", name, err)
	}
	return Kind{}, fmt.Errorf("kind %s: the cluster serves no kind of that name with a scale subresource", name)
}

// discover lists, once, every namespaced kind the API server serves with a
// scale subresource, in its group's preferred version. Groups that failed
// discovery are missing, and the error says which. It asks for every
// version (not ServerPreferredResources) since the known kinds are read at
// a version of their own, which need not be the preferred one.
func (k *Kinds) discover(kube kubernetes.Interface) ([]Kind, error) {
	k.once.Do(func() {
		groups, lists, err := discovery.ServerGroupsAndResources(kube.Discovery())
		k.err = err
		preferred := map[string]bool{}
		for _, g := range groups {
			preferred[g.PreferredVersion.GroupVersion] = true
		}
		k.served = map[schema.GroupVersionResource]bool{}
		for _, list := range lists {
			gv, perr := schema.ParseGroupVersion(list.GroupVersion)
			if perr != nil {
				continue
			}
			for _, r := range list.APIResources {
				k.served[gv.WithResource(r.Name)] = true
			}
			if preferred[list.GroupVersion] {
				scale := scaleKinds(gv, list.APIResources)
				k.found = append(k.found, scale...)
				k.custom = append(k.custom, customKinds(gv, list.APIResources, scale)...)
			}
		}
	})
	return k.found, k.err
}

// scaleKinds are the namespaced resources of gv that have a scale
// subresource and can be listed and patched.
func scaleKinds(gv schema.GroupVersion, resources []metav1.APIResource) []Kind {
	var out []Kind
	for _, r := range resources {
		parent, sub, ok := strings.Cut(r.Name, "/")
		if !ok || sub != "scale" {
			continue
		}
		i := slices.IndexFunc(resources, func(p metav1.APIResource) bool { return p.Name == parent })
		if i < 0 || !resources[i].Namespaced || !slices.Contains(resources[i].Verbs, "list") || !slices.Contains(resources[i].Verbs, "patch") {
			continue
		}
		out = append(out, Kind{Name: resources[i].Kind, Resource: gv.WithResource(parent), Found: true, Way: workload.Scale})
	}
	return out
}

// ResourcePath is the path of resource's objects in namespace, or in every
// namespace when it is metav1.NamespaceAll.
func ResourcePath(resource schema.GroupVersionResource, namespace string) []string {
	path := []string{"/apis", resource.Group, resource.Version}
	if resource.Group == "" {
		path = []string{"/api", resource.Version}
	}
	if namespace != metav1.NamespaceAll {
		path = append(path, "namespaces", namespace)
	}
	return append(path, resource.Resource)
}

// customKinds are the namespaced resources of gv, a custom resources'
// group, that can be listed and patched and have no scale subresource
// (those of scale sleep by it).
func customKinds(gv schema.GroupVersion, resources []metav1.APIResource, scale []Kind) []Kind {
	if !patch.Custom(gv.Group) {
		return nil
	}
	var out []Kind
	for _, r := range resources {
		if strings.Contains(r.Name, "/") || !r.Namespaced || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "patch") ||
			slices.ContainsFunc(scale, func(k Kind) bool { return k.Resource.Resource == r.Name }) {
			continue
		}
		out = append(out, Kind{Name: r.Kind, Resource: gv.WithResource(r.Name)})
	}
	return out
}

// Patched returns the selections of patches, each of its kind as the
// cluster serves it (see customKinds), put to sleep and woken by its
// patch, or an error naming each patch whose kind the cluster does not
// serve so: a sleep resolves all of them before it writes anything.
func (k *Kinds) Patched(kube kubernetes.Interface, patches []patch.Patch) ([]Selection, error) {
	if len(patches) == 0 {
		return nil, nil
	}
	_, err := k.discover(kube)
	custom := k.custom
	var out []Selection
	var errs []error
	for i, p := range patches {
		j := slices.IndexFunc(custom, func(c Kind) bool { return c.Resource.Group == p.Group && strings.EqualFold(c.Name, p.Kind) })
		switch {
		case j >= 0:
			kind := custom[j]
			kind.Way, kind.Parked = workload.Patched(p), true
			out = append(out, Selection{Kind: kind, Labels: p.Labels})
		case slices.ContainsFunc(k.found, func(f Kind) bool { return f.Resource.Group == p.Group && strings.EqualFold(f.Name, p.Kind) }):
			errs = append(errs, fmt.Errorf("patches[%d]: kind %s has a scale subresource: select it in selectors, which scale it", i, p))
		case err != nil:
			errs = append(errs, fmt.Errorf("patches[%d]: kind %s: discovery failed: %w", i, p, err))
		default:
			errs = append(errs, fmt.Errorf("patches[%d]: the cluster serves no namespaced kind %s that can be listed and patched", i, p))
		}
	}
	return out, errors.Join(errs...)
}

// Patchable is every kind a sleep's patches may have patched (see
// customKinds) that nsman may patch everywhere, each woken by its record
// alone: nsman restore's, which knows no policy.
func (k *Kinds) Patchable(ctx context.Context, kube kubernetes.Interface) []Selection {
	_, _ = k.discover(kube)
	allowed := make([]bool, len(k.custom))
	var wg sync.WaitGroup
	for i, kind := range k.custom {
		wg.Go(func() { allowed[i] = k.mayPatch(ctx, kube, kind) })
	}
	wg.Wait()
	var out []Selection
	for i, kind := range k.custom {
		if allowed[i] {
			kind.Way, kind.Parked = workload.Patched(patch.Patch{}), true
			out = append(out, Selection{Kind: kind})
		}
	}
	return out
}
