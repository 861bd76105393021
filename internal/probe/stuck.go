package probe

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

// Stuck is what a sweep found of the stuck namespaces it read (see
// NewStuck); it is safe for concurrent use.
type Stuck struct {
	reads Reads
	// after is --stuck-after: how long a namespace terminates before it
	// is stuck.
	after time.Duration
	mu    sync.Mutex
	byNS  map[string]*stuckRead
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

// NewStuck returns the stuck namespaces of a sweep that reads with reads,
// a namespace Terminating for longer than after being stuck.
func NewStuck(reads Reads, after time.Duration) *Stuck { return &Stuck{reads: reads, after: after} }

type stuckRead struct {
	once  sync.Once
	stuck *report.Stuck
	err   error
}

// Of returns why namespace ns, as listed, is stuck at now, or nil while
// it is not terminating, or not for long enough yet.
func (x *Stuck) Of(ctx context.Context, ns cluster.Namespace, now time.Time) (*report.Stuck, error) {
	if !ns.Terminating || ns.Deleting.IsZero() || now.Sub(ns.Deleting) < x.after {
		return nil, nil
	}
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
	read.once.Do(func() { read.stuck, read.err = x.read(ctx, ns) })
	return read.stuck, read.err
}

// read reads namespace ns whole (a list by name: nsman may list
// namespaces, not get them) and says why it is stuck; gone meanwhile, it
// is not.
func (x *Stuck) read(ctx context.Context, ns cluster.Namespace) (*report.Stuck, error) {
	var n *corev1.Namespace
	if index := x.sweepIndex(ctx); index != nil {
		n = index[ns.Name]
	} else {
		list, err := x.reads.Clients.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{
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
	return &report.Stuck{Since: n.DeletionTimestamp.UTC(), Reasons: stuckReasons(n, x.failingGroups)}, nil
}

// sweepIndex is every terminating namespace, listed once past
// stuckIndexAfter namespaces read; nil before, or when listing failed.
func (x *Stuck) sweepIndex(ctx context.Context) map[string]*corev1.Namespace {
	if x.asked.Add(1) <= stuckIndexAfter {
		return nil
	}
	x.indexOnce.Do(func() {
		index := map[string]*corev1.Namespace{}
		list := func() *rest.Request {
			return x.reads.RESTClient(corev1.SchemeGroupVersion).Get().Resource("namespaces")
		}
		// Whole namespaces, 500 a page, each decoded as it arrives into
		// what stuckReasons reads: annotations (up to 256 KiB each) and
		// managed fields are read past, not kept.
		err := cluster.EachStreamed(ctx, x.reads.PageSize, metav1.ListOptions{}, list, func(n *stuckFields) error {
			if n.Metadata.DeletionTimestamp != nil {
				index[n.Metadata.Name] = n.namespace()
			}
			return nil
		})
		if err != nil {
			x.reads.Log.Warn("reading stuck namespaces one by one", "error", fmt.Errorf("list namespaces: %w", err).Error())
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
func (x *Stuck) failingGroups() []string {
	x.discoveryOnce.Do(func() {
		_, _, err := discovery.ServerGroupsAndResources(x.reads.Clients.Kube.Discovery())
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
