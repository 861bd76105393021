package sweep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// A namespace that a manager deleted or aims at, or that a rule with a
// DELETE policy matches, still Terminating --stuck-after its
// deletionTimestamp, is stuck: its entry, the status and
// one Warning Event per cause say why, from the namespace controller's
// conditions and the namespace's own finalizers. It is read whole (status
// and all) only then, once per sweep however many subjects name it.

// stuckIndexAfter is the number of stuck namespaces one sweep reads one by
// one (a list by name each) before it reads the rest from one paged list
// of every namespace, keeping those terminating: an APIService down holds
// every namespace deleted in the cluster, and a rule may match them all.
const stuckIndexAfter = 32

// stuckNamespaces is what a sweep found of the stuck namespaces it read.
type stuckNamespaces struct {
	mu   sync.Mutex
	byNS map[string]*stuckRead
	// asked counts the namespaces read; past stuckIndexAfter, index holds
	// every terminating namespace, whole, listed once (nil when that
	// failed: they are read one by one).
	asked     atomic.Int64
	indexOnce sync.Once
	index     map[string]*corev1.Namespace
	// discovery is the sweep's discovery of the API groups that fail,
	// made once, when a namespace says discovery failed.
	discoveryOnce sync.Once
	failing       []string
}

type stuckRead struct {
	once  sync.Once
	stuck *report.Stuck
	err   error
}

// stuck returns why namespace ns, as listed, is stuck at now, or nil while
// it is not terminating, or not for StuckAfter yet.
func (s *Sweeper) stuck(ctx context.Context, r *sweepRun, ns cluster.Namespace) (*report.Stuck, error) {
	if !ns.Terminating || ns.Deleting.IsZero() || r.now.Sub(ns.Deleting) < s.cfg.StuckAfter {
		return nil, nil
	}
	x := &r.stuck
	x.mu.Lock()
	if x.byNS == nil {
		x.byNS = map[string]*stuckRead{}
	}
	read := x.byNS[ns.Name]
	if read == nil {
		read = &stuckRead{}
		x.byNS[ns.Name] = read
	}
	x.mu.Unlock()
	read.once.Do(func() { read.stuck, read.err = s.readStuck(ctx, x, ns) })
	return read.stuck, read.err
}

// readStuck reads namespace ns whole (a list by name: nsman may list
// namespaces, not get them) and says why it is stuck; gone meanwhile, it
// is not.
func (s *Sweeper) readStuck(ctx context.Context, x *stuckNamespaces, ns cluster.Namespace) (*report.Stuck, error) {
	var n *corev1.Namespace
	if index := s.stuckIndex(ctx, x); index != nil {
		n = index[ns.Name]
	} else {
		list, err := s.clients.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", ns.Name).String(),
		})
		if err != nil {
			return nil, fmt.Errorf("read namespace %s to say why it is stuck: %w", ns.Name, err)
		}
		if len(list.Items) > 0 {
			n = &list.Items[0]
		}
	}
	if n == nil || n.UID != ns.UID || n.DeletionTimestamp == nil {
		return nil, nil
	}
	return &report.Stuck{Since: n.DeletionTimestamp.UTC(), Reasons: stuckReasons(n, func() []string { return s.failingGroups(x) })}, nil
}

// stuckIndex is every terminating namespace, listed once past
// stuckIndexAfter namespaces read; nil before, or when listing failed.
func (s *Sweeper) stuckIndex(ctx context.Context, x *stuckNamespaces) map[string]*corev1.Namespace {
	if x.asked.Add(1) <= stuckIndexAfter {
		return nil
	}
	x.indexOnce.Do(func() {
		index := map[string]*corev1.Namespace{}
		list := func() *rest.Request {
			return s.reads().RESTClient(corev1.SchemeGroupVersion).Get().Resource("namespaces")
		}
		// Whole namespaces, 500 a page, each decoded as it arrives into
		// what stuckReasons reads: annotations (up to 256 KiB each) and
		// managed fields are read past, not kept.
		err := cluster.EachStreamed(ctx, s.cfg.PageSize, metav1.ListOptions{}, list, func(n *stuckFields) error {
			if n.Metadata.DeletionTimestamp != nil {
				index[n.Metadata.Name] = n.namespace()
			}
			return nil
		})
		if err != nil {
			s.log.Warn("reading stuck namespaces one by one", "error", fmt.Errorf("list namespaces: %w", err).Error())
			return
		}
		x.index = index
	})
	return x.index
}

// stuckFields is what stuckReasons reads of a namespace.
type stuckFields struct {
	Metadata struct {
		Name              string       `json:"name"`
		UID               types.UID    `json:"uid"`
		DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
		Finalizers        []string     `json:"finalizers"`
	} `json:"metadata"`
	Spec   corev1.NamespaceSpec   `json:"spec"`
	Status corev1.NamespaceStatus `json:"status"`
}

func (f *stuckFields) namespace() *corev1.Namespace {
	m := &f.Metadata
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.Name, UID: m.UID, DeletionTimestamp: m.DeletionTimestamp, Finalizers: m.Finalizers},
		Spec: f.Spec, Status: f.Status}
}

// failingGroups names the API group versions discovery fails on now, each
// with the APIService that serves it (named version.group, as the API
// server requires) and the error: once per sweep.
func (s *Sweeper) failingGroups(x *stuckNamespaces) []string {
	x.discoveryOnce.Do(func() {
		_, _, err := discovery.ServerGroupsAndResources(s.clients.Kube.Discovery())
		var failed *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &failed) {
			return
		}
		for gv, gerr := range failed.Groups {
			x.failing = append(x.failing, fmt.Sprintf("APIService %s.%s (%s) is unavailable: %v", gv.Version, gv.Group, gv, gerr))
		}
		slices.Sort(x.failing)
	})
	return x.failing
}

// stuckReasons says what holds namespace n in Terminating, in the order a
// person would clear it; failing names the API groups discovery fails on.
func stuckReasons(n *corev1.Namespace, failing func() []string) []report.StuckReason {
	var reasons []report.StuckReason
	add := func(reason, msg string) {
		reasons = append(reasons, report.StuckReason{Reason: reason, Message: status.Truncate(msg, status.MaxMessage)})
	}
	conds := map[corev1.NamespaceConditionType]string{}
	for _, c := range n.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			conds[c.Type] = c.Message
		}
	}
	if msg, ok := conds[corev1.NamespaceDeletionDiscoveryFailure]; ok {
		if groups := failing(); len(groups) > 0 {
			msg = strings.Join(groups, "; ") + ": the namespace controller finishes deleting no namespace of the cluster until it is available again, or the APIService is deleted"
		}
		add(report.StuckDiscoveryFailure, msg)
	}
	if msg, ok := conds[corev1.NamespaceDeletionGVParsingFailure]; ok {
		add(report.StuckGroupVersionParsingFailure, msg)
	}
	if msg, ok := conds[corev1.NamespaceDeletionContentFailure]; ok {
		add(report.StuckContentFailure, msg)
	}
	if msg, ok := conds[corev1.NamespaceFinalizersRemaining]; ok {
		add(report.StuckFinalizersRemaining, msg+": the controller that owns each finalizer (named by its prefix) has not removed it; is it still installed?")
	}
	if msg, ok := conds[corev1.NamespaceContentRemaining]; ok {
		add(report.StuckContentRemaining, msg)
	}
	own := slices.DeleteFunc(slices.Clone(n.Spec.Finalizers), func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
	if len(own) > 0 || len(n.Finalizers) > 0 {
		var names []string
		for _, f := range own {
			names = append(names, "spec.finalizers "+string(f))
		}
		for _, f := range n.Finalizers {
			names = append(names, "metadata.finalizers "+f)
		}
		add(report.StuckNamespaceFinalizers, "the namespace's own finalizers remain ("+strings.Join(names, ", ")+"): whoever added them must remove them")
	}
	if len(reasons) == 0 {
		add(report.StuckUnknown, "the namespace controller has said nothing of what is left: is kube-controller-manager running?")
	}
	return reasons
}

// stuckMessage is the entry's message for namespace name, stuck as st
// says: its reasons named, their words in st (which change with counts of
// objects left, and would rewrite the status at every sweep).
func stuckMessage(name string, st *report.Stuck) string {
	reasons := make([]string, 0, len(st.Reasons))
	for _, r := range st.Reasons {
		reasons = append(reasons, r.Reason)
	}
	return fmt.Sprintf("namespace %s is stuck in Terminating since %s (%s); nsman explain %s says what holds it",
		name, st.Since.UTC().Format(time.RFC3339), strings.Join(reasons, ", "), name)
}

// terminating is the entry of a subject whose target ns is terminating:
// stuck, when it is, with why. Reading why may fail (unread): the entry
// says so, and what the record says of it is kept as it was.
func (s *Sweeper) terminating(ctx context.Context, r *sweepRun, e report.Entry, ns cluster.Namespace, msg string) (_ report.Entry, unread bool) {
	e.State, e.Message = report.StateTargetTerminating, msg
	st, err := s.stuck(ctx, r, ns)
	switch {
	case err != nil:
		e.Message += "; " + err.Error()
		return e, true
	case st != nil:
		e.Stuck, e.Message = st, stuckMessage(ns.Name, st)
	}
	return e, false
}

// deletedTerminating is the verdict of a manager deactivated by its
// DELETE while its target is still terminating: its entry says so, and a
// stuck namespace is written in its status (only when the cause changes).
// A status that still says stuck of a namespace now gone is cleared. The
// tenancy guards come first: what the status of a manager they refuse says
// of another namespace is its tenant's word, and no namespace is read for it.
func (s *Sweeper) deletedTerminating(ctx context.Context, r *sweepRun, m policy.Manager, e report.Entry, stored status.Status) (decision, bool) {
	if s.refuse(m) != "" {
		return decision{}, false
	}
	last := stored.LastAction
	deleted := last != nil && last.Action == policy.ActionDelete && last.Result == report.ResultSucceeded && e.Target != m.Namespace
	if !deleted && stored.Stuck == nil {
		return decision{}, false
	}
	namespaces, err := s.namespaces(ctx, r)
	if err != nil {
		return decision{}, false
	}
	ns, exists := namespaces[e.Target]
	// The namespace it deleted, not one recreated under its name since,
	// nor one a status written by hand names: a record without targetUID
	// matches none.
	deleted = deleted && exists && last.TargetUID != "" && last.TargetUID == ns.UID
	if !deleted || !ns.Terminating {
		if stored.Stuck == nil {
			return decision{}, false
		}
		// Gone: the status says stuck no more.
		e.State, e.Message = report.StateDeactivated, "spec.deactivated is true"
		return decision{manager: m, entry: e, stuckOnly: true}, true
	}
	e.Policy, e.Action = last.Policy, last.Action
	e, unread := s.terminating(ctx, r, e, ns, fmt.Sprintf("namespace %s, deleted by policy %q at %s, is terminating", e.Target, last.Policy, last.Time.UTC().Format(time.RFC3339)))
	return decision{manager: m, entry: e, stuckOnly: true, stuckUnread: unread}, true
}
