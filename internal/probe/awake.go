package probe

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/workload"
	"github.com/nsman/nsman/policy"
)

// AwakeIndexAfter is the number of namespaces asked about in one sweep
// after which Awake stops listing namespace by namespace (a request per
// kind each) and lists every kind once, cluster-wide and paged.
const AwakeIndexAfter = 20

// MaxAwake bounds the workloads the cluster-wide index keeps: past it, the
// index is given up and namespaces are read one by one.
const MaxAwake = 100_000

// MaxAwakeIn bounds the workloads awake that a read keeps of one namespace,
// read alone as by the index: past it, the read says there are more (In's
// more), named by a later sweep once the first are put back to sleep. One
// namespace read alone stops listing there.
const MaxAwakeIn = 100

// Awake finds the workloads awake in the namespaces a SLEEP policy keeps
// asleep: scaled above zero (above the policy's replicas, and above those
// its record says a sleep left it at), a CronJob not suspended, a
// ScaledObject not paused at zero, an object of a patch's kind not as the
// patch makes it (see patchedIn), but for those labelled status.KeepAwakeLabel and, of a
// kind found by discovery, those another object controls. Of each it says
// who woke it: the field manager that last set what keeps it awake. A sweep
// makes one; it is safe for concurrent use.
type Awake struct {
	reads Reads
	kinds *Kinds
	// asked counts the namespaces asked about, ahead those the managers
	// listed say are asleep; past AwakeIndexAfter of either, or with a
	// rule over more (IndexAll), indexed is set and every namespace is
	// answered from the index, from the first.
	asked, ahead atomic.Int64
	indexed      atomic.Bool
	once         sync.Once
	index        map[string]*awakeIn // by namespace; nil: not built, or given up
	// patched are the indexes of the patches' kinds (see patchedIndex), by
	// patch: a *patchIndex each.
	patched sync.Map
}

// awakeIn is what a read keeps of one namespace: at most MaxAwakeIn
// workloads, and whether there were more.
type awakeIn struct {
	found []Awoken
	more  bool
}

// IndexAll answers every namespace from the sweep's index, from the first.
func (a *Awake) IndexAll() { a.indexed.Store(true) }

// Indexed reports whether every namespace will be answered from the
// sweep's index (IndexAll, or ExpectAhead counted past AwakeIndexAfter).
func (a *Awake) Indexed() bool { return a.indexed.Load() }

// Prefetch lists the sweep's index now, if Indexed: a sweep that knows it
// will ask lists it beside its other reads, and the first In waits for
// what is left of it rather than for all of it.
func (a *Awake) Prefetch(ctx context.Context) {
	if a.Indexed() {
		a.sweepIndex(ctx)
	}
}

// ExpectAhead counts, of a page of managers, those of this sweep (ours)
// whose status says their target is asleep, before any is evaluated: a
// sweep that will ask about more than AwakeIndexAfter lists the index at
// the first, rather than that many namespaces one by one first.
func (a *Awake) ExpectAhead(page *listpage.ManagerPage, ours func(types.UID) bool) {
	for i := range page.Items {
		if it := &page.Items[i]; bytes.Contains(it.Status, []byte(`"asleep":{`)) && ours(it.Metadata.UID) && a.ahead.Add(1) > AwakeIndexAfter {
			a.indexed.Store(true)
		}
	}
}

// Awoken is a workload awake where it should sleep.
type Awoken struct {
	// Kind is its kind's name, Group its API group.
	Kind, Group, Name string
	// Undone: it carries nsman's record of a sleep, so someone woke it
	// since; else it was never put to sleep (created since, say).
	Undone bool
	// By is the field manager that last set what keeps it awake, "" when
	// the object does not say.
	By string
	// way and spec say whether it is above what a policy's sleep leaves
	// (workload.Way's Above): the index keeps what is awake for every
	// policy, each In asks for its own.
	way  workload.Way
	spec workload.Spec
	// parked: of a parked kind, which a policy's selectors do not name.
	parked bool
}

// NewAwake is the Awake of a sweep that reads through reads and resolves
// kinds with kinds.
func NewAwake(reads Reads, kinds *Kinds) *Awake { return &Awake{reads: reads, kinds: kinds} }

// In returns the workloads awake in namespace of the kinds named (Kind or
// Kind.group, any letter case; none: every kind) above what a sleep to to
// leaves them at (a workload at to's replicas is asleep), grouped by who
// woke them: one line per field manager, "BY: Kind/name, ..." ("someone"
// when unknown, "new" for workloads never put to sleep); more: more than
// MaxAwakeIn were awake, of any kind, and those past it are not named.
func (a *Awake) In(ctx context.Context, namespace string, kinds []string, to policy.SleepTo) (_ []string, more bool, _ error) {
	in := &awakeIn{}
	indexed := a.indexed.Load() || a.asked.Add(1) > AwakeIndexAfter
	if indexed && a.sweepIndex(ctx) != nil {
		in = cmp.Or(a.index[namespace], in)
	} else {
		ctx, cancel := context.WithTimeout(ctx, a.reads.NamespaceTimeout())
		defer cancel()
		byNamespace, err := a.list(ctx, namespace, 0, &to)
		if err != nil {
			return nil, false, err
		}
		in = cmp.Or(byNamespace[namespace], in)
	}
	found, more := in.found, in.more
	if len(to.Patches) > 0 && len(found) < MaxAwakeIn {
		patched, full, err := a.patchedIn(ctx, namespace, to.Patches, indexed)
		if err != nil {
			return nil, false, err
		}
		room := MaxAwakeIn - len(found)
		found = append(slices.Clone(found), patched[:min(room, len(patched))]...)
		more = more || full || len(patched) > room
	}
	return causes(found, kinds, to), more, nil
}

// sweepIndex lists, once, every kind's workloads awake cluster-wide; nil
// when that failed or had more than MaxAwake to keep.
func (a *Awake) sweepIndex(ctx context.Context) map[string]*awakeIn {
	a.once.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, a.reads.ClaimTTL)
		defer cancel()
		index, err := a.list(ctx, metav1.NamespaceAll, MaxAwake, nil)
		if err != nil {
			a.reads.Log.Warn("reading awake workloads namespace by namespace", "error", fmt.Errorf("list for the sweep's index of awake workloads: %w", err).Error())
			return
		}
		a.index = index
	})
	return a.index
}

// errTooManyAwake ends an index past MaxAwake.
var errTooManyAwake = errors.New("more awake workloads than the index keeps")

// errNamespaceFull ends the read of one namespace past MaxAwakeIn.
var errNamespaceFull = errors.New("more awake workloads than a namespace's read keeps")

// list lists the workloads of every kind nsman may list in namespace (all,
// with metav1.NamespaceAll; of the parked kinds, those a sleep to to parks,
// every one for nil), paged and decoded one at a time, and keeps the
// awake ones, at most MaxAwakeIn of a namespace; it gives up past max kept
// in all (0: no bound). The read of one namespace lists the kinds in turn
// and stops at the first workload past MaxAwakeIn; the cluster-wide index
// lists them side by side (see listAll).
func (a *Awake) list(ctx context.Context, namespace string, max int, to *policy.SleepTo) (map[string]*awakeIn, error) {
	// The groups whose discovery failed are left out: every kind known
	// still answers.
	selections, _, discoveryErr := a.kinds.All(ctx, a.reads.Clients.Kube)
	// The parked kinds too, their objects that may be awake alone (see
	// listKind): for the index, kept for every policy, each In asks for
	// its own (Above); a namespace read alone, only those to parks.
	for _, p := range parkedKinds {
		if to == nil || p.parks(*to) {
			selections = append(selections, Selection{Kind: p.kind})
		}
	}
	var out map[string]*awakeIn
	if namespace == metav1.NamespaceAll {
		var err error
		if out, err = a.listAll(ctx, selections, max); err != nil {
			return nil, err
		}
	} else {
		out = map[string]*awakeIn{}
		var kept atomic.Int64
		for _, sel := range selections {
			if err := a.listKind(ctx, sel.Kind, namespace, out, &kept, max); errors.Is(err, errNamespaceFull) {
				return out, nil
			} else if err != nil {
				return nil, err
			}
		}
	}
	if discoveryErr != nil {
		return nil, fmt.Errorf("kinds with a scale subresource: %w", discoveryErr)
	}
	return out, nil
}

// listAll lists every kind of selections cluster-wide, side by side, each
// into a map of its own, then merges them in the kinds' order, as one
// list after the other would have kept them: at most MaxAwakeIn of a
// namespace, the first kinds' first. kept counts what every kind keeps
// before the merge, so that max bounds the workloads held at once. Side by
// side, a sweep while asleep waits for its longest list, not their sum
// (make bench's sleep part).
func (a *Awake) listAll(ctx context.Context, selections []Selection, max int) (map[string]*awakeIn, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	byKind := make([]map[string]*awakeIn, len(selections))
	// The first list to fail says why, and ends the others.
	var first error
	var failed sync.Once
	var kept atomic.Int64
	var wg sync.WaitGroup
	for i, sel := range selections {
		byKind[i] = map[string]*awakeIn{}
		wg.Go(func() {
			if err := a.listKind(ctx, sel.Kind, metav1.NamespaceAll, byKind[i], &kept, max); err != nil {
				failed.Do(func() { first = err; cancel() })
			}
		})
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	out := map[string]*awakeIn{}
	for _, kind := range byKind {
		for namespace, in := range kind {
			all := out[namespace]
			if all == nil {
				all = &awakeIn{}
				out[namespace] = all
			}
			room := MaxAwakeIn - len(all.found)
			all.found = append(all.found, in.found[:min(room, len(in.found))]...)
			all.more = all.more || in.more || len(in.found) > room
		}
	}
	return out, nil
}

// listKind lists kind's workloads in namespace into out, keeping the awake
// ones, at most MaxAwakeIn of a namespace (then more is set, and a
// namespace read alone ends with errNamespaceFull), and fails with
// errTooManyAwake once kept, shared by the kinds listed side by side,
// passes max (0: no bound). A kind the cluster does not serve has none;
// one found by discovery that nsman may not list is denied for the sweep.
func (a *Awake) listKind(ctx context.Context, kind Kind, namespace string, out map[string]*awakeIn, kept *atomic.Int64, max int) error {
	list := func() *rest.Request {
		return a.reads.Clients.Kube.Discovery().RESTClient().Get().AbsPath(ResourcePath(kind.Resource, namespace)...)
	}
	// A kind's AwakeFields lists only what may be awake (a parked kind's).
	err := cluster.EachStreamed(ctx, a.reads.PageSize, metav1.ListOptions{FieldSelector: kind.AwakeFields}, list, func(f *awakeFields) error {
		w, awake := f.awoken(kind)
		if !awake {
			return nil
		}
		in := out[f.Metadata.Namespace]
		if in == nil {
			in = &awakeIn{}
			out[f.Metadata.Namespace] = in
		}
		if len(in.found) == MaxAwakeIn {
			in.more = true
			if namespace != metav1.NamespaceAll {
				return errNamespaceFull
			}
			return nil
		}
		// max counts what is kept: a namespace's past MaxAwakeIn turn
		// no other's index off.
		if max > 0 && kept.Add(1) > int64(max) {
			return errTooManyAwake
		}
		in.found = append(in.found, w)
		return nil
	})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case errors.Is(err, errNamespaceFull), errors.Is(err, errTooManyAwake):
		return err
	case kind.Found && apierrors.IsForbidden(err):
		// A kind nsman may not list is one it never put to sleep.
		a.kinds.Deny(kind.Resource.GroupResource())
		return nil
	}
	return fmt.Errorf("list %s: %w", kind.Resource.GroupResource(), err)
}

// causes groups found, of the kinds named (none: all) and above what a
// sleep to to leaves, by who woke them.
func causes(found []Awoken, kinds []string, to policy.SleepTo) []string {
	by := map[string][]string{}
	for _, w := range found {
		if len(kinds) > 0 && !w.parked && !slices.ContainsFunc(kinds, func(k string) bool { return names(w, k) }) || !w.way.Above(&w.spec, to) {
			continue
		}
		who := w.By
		switch {
		case !w.Undone:
			who = "new"
		case who == "":
			who = "someone"
		}
		by[who] = append(by[who], w.Kind+"/"+w.Name)
	}
	out := make([]string, 0, len(by))
	for who, ws := range by {
		sort.Strings(ws)
		out = append(out, who+": "+strings.Join(ws, ", "))
	}
	sort.Strings(out)
	return out
}

// names reports whether selector kind k (Kind or Kind.group, the kind in
// any letter case) names w's kind.
func names(w Awoken, k string) bool {
	kind, group, grouped := strings.Cut(k, ".")
	return strings.EqualFold(kind, w.Kind) && (!grouped || group == w.Group)
}

// awakeFields is what Awake reads of a workload.
type awakeFields struct {
	Metadata struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		Labels          map[string]string `json:"labels"`
		Annotations     map[string]string `json:"annotations"`
		OwnerReferences []struct {
			Controller *bool `json:"controller"`
		} `json:"ownerReferences"`
		// ManagedFields is decoded only for a workload awake (lastSet): most
		// listed are asleep, and their entries cost most of a sweep's CPU
		// while asleep (a CPU profile of make bench's sleep part).
		ManagedFields json.RawMessage `json:"managedFields"`
	} `json:"metadata"`
	// Spec is what the kinds' ways read of a workload's spec.
	Spec workload.Spec `json:"spec"`
}

// awoken is f as an Awoken of kind, and whether it is awake where it
// should sleep.
func (f *awakeFields) awoken(kind Kind) (Awoken, bool) {
	m := &f.Metadata
	if m.Labels[status.KeepAwakeLabel] == "true" || kind.Found && slices.ContainsFunc(m.OwnerReferences, func(o struct {
		Controller *bool `json:"controller"`
	}) bool {
		return o.Controller != nil && *o.Controller
	}) {
		return Awoken{}, false
	}
	if !kind.Way.Awake(&f.Spec, m.Annotations) {
		return Awoken{}, false
	}
	_, undone := m.Annotations[kind.Way.Record()]
	return Awoken{Kind: kind.Name, Group: kind.Resource.Group, Name: m.Name, Undone: undone, By: f.lastSet(kind.Way.AwakeField()), way: kind.Way, spec: f.Spec, parked: kind.Parked}, true
}

// lastSet is the field manager that last set the field at path (of
// fieldsV1 keys), "" when none says it owns it.
func (f *awakeFields) lastSet(path []string) string {
	var entries []struct {
		Manager  string          `json:"manager"`
		Time     *metav1.Time    `json:"time"`
		FieldsV1 json.RawMessage `json:"fieldsV1"`
	}
	if len(f.Metadata.ManagedFields) == 0 || json.Unmarshal(f.Metadata.ManagedFields, &entries) != nil {
		return ""
	}
	var by string
	var at time.Time
	for _, mf := range entries {
		if !owns(mf.FieldsV1, path) {
			continue
		}
		if t := mf.Time; by == "" || t != nil && t.After(at) {
			by = mf.Manager
			if t != nil {
				at = t.Time
			}
		}
	}
	return by
}

// owns reports whether fieldsV1 has path.
func owns(fields json.RawMessage, path []string) bool {
	for _, key := range path {
		var level map[string]json.RawMessage
		if json.Unmarshal(fields, &level) != nil {
			return false
		}
		next, ok := level[key]
		if !ok {
			return false
		}
		fields = next
	}
	return true
}
