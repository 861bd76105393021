package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// ActivityIndexAfter is the number of namespaces of one sweep whose last
// activity (for IDLE) is read namespace by namespace, four paged lists each
// (ReplicaSets, ControllerRevisions, Jobs, pods; metadata only), before the
// sweep lists the four once, cluster-wide, keeping the newest creation per
// namespace. 32 namespaces cost 128 requests, about what the cluster-wide
// lists of a cluster of 16,000 objects of each kind take: past it, the
// cluster-wide lists cost less than going on one by one.
const ActivityIndexAfter = 32

// activityResources are what an IDLE condition counts the creation of as
// activity in a namespace. Of objects created in the same second, the
// first listed is named: a rollout's ReplicaSet, a Job, rather than their
// pods.
var activityResources = []struct {
	resource schema.GroupVersionResource
	kind     string
}{
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, "ReplicaSet"},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "controllerrevisions"}, "ControllerRevision"},
	{batchv1.SchemeGroupVersion.WithResource("jobs"), "Job"},
	{corev1.SchemeGroupVersion.WithResource("pods"), "Pod"},
}

// Activity is what one sweep knows of the last activity in namespaces
// (see NewActivity); it is safe for concurrent use.
type Activity struct {
	reads Reads
	// mu guards asked, the namespaces asked about, each read once a sweep
	// however many subjects ask, and ahead, those the managers listed say
	// will be (see readsActivity): both count namespaces, not managers, so
	// that many IDLE managers of one namespace cost its four lists, once.
	// Past ActivityIndexAfter of either, or with a rule over more
	// namespaces (see ruleReadsActivity), indexed is set and every
	// namespace is answered from the index, from the first (see IndexAll).
	mu      sync.Mutex
	asked   map[string]*activityRead
	ahead   map[string]bool
	indexed atomic.Bool
	// once lists index past ActivityIndexAfter namespaces: the newest
	// creation in each namespace that has any; nil when listing failed.
	once  sync.Once
	index map[string]created
}

// activityRead is the last activity read in one namespace.
type activityRead struct {
	once     sync.Once
	activity policy.Activity
	err      error
}

// NewActivity returns the activity reads of a sweep that reads with reads.
func NewActivity(reads Reads) *Activity { return &Activity{reads: reads} }

// IndexAll answers every namespace from the sweep's index, from the
// first, and lists the index now, on a goroutine start starts: a sweep
// that knows it will ask lists it beside its other reads (the namespaces),
// and the first Last waits for what is left of it rather than for all of
// it.
func (x *Activity) IndexAll(ctx context.Context, start func(func())) {
	x.indexed.Store(true)
	start(func() { x.sweepIndex(ctx) })
}

// ask returns the read of namespace, and how many namespaces were asked
// about.
func (x *Activity) ask(namespace string) (*activityRead, int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.asked == nil {
		x.asked = map[string]*activityRead{}
	}
	read := x.asked[namespace]
	if read == nil {
		read = &activityRead{}
		x.asked[namespace] = read
	}
	return read, len(x.asked)
}

// expect counts namespace among those the managers listed will read.
func (x *Activity) expect(namespace string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ahead == nil {
		x.ahead = map[string]bool{}
	}
	if x.ahead[namespace] = true; len(x.ahead) > ActivityIndexAfter {
		x.indexed.Store(true)
	}
}

// created is the newest object created in a namespace.
type created struct {
	at         time.Time
	kind, name string
}

func (c created) activity() policy.Activity {
	if c.at.IsZero() {
		return policy.Activity{}
	}
	return policy.Activity{At: c.at, What: fmt.Sprintf("%s %s created", c.kind, c.name)}
}

// Last is the newest creation of a pod, ReplicaSet,
// ControllerRevision or Job in namespace (a zero At: none). Past
// ActivityIndexAfter namespaces it comes from the sweep's cluster-wide
// index, and indexed is true: what the index found did happen, but what
// was created since it was listed is missing from it, so that it can keep
// an IDLE policy waiting, not let it hold (its caller confirms with Read).
func (x *Activity) Last(ctx context.Context, namespace string) (a policy.Activity, indexed bool, err error) {
	// Answered from the index, a namespace is not counted among those
	// asked: the count decides only whether to list the index.
	if x.indexed.Load() {
		if index := x.sweepIndex(ctx); index != nil {
			return index[namespace].activity(), true, nil
		}
	}
	read, asked := x.ask(namespace)
	if asked > ActivityIndexAfter {
		if index := x.sweepIndex(ctx); index != nil {
			return index[namespace].activity(), true, nil
		}
	}
	read.once.Do(func() { read.activity, read.err = x.Read(ctx, namespace) })
	return read.activity, false, read.err
}

// Read is the newest creation in namespace, read from its own
// lists, bounded by Reads.NamespaceTimeout: a namespace of very many pods
// fails its IDLE policy's read (and the policy waits) rather than holding
// up a worker of the sweep.
func (x *Activity) Read(ctx context.Context, namespace string) (policy.Activity, error) {
	ctx, cancel := context.WithTimeout(ctx, x.reads.NamespaceTimeout())
	defer cancel()
	byNamespace, err := x.reads.listCreated(ctx, namespace)
	if err != nil {
		return policy.Activity{}, fmt.Errorf("read the last activity in %s: %w", namespace, err)
	}
	return byNamespace[namespace].activity(), nil
}

// sweepIndex returns the sweep's index of the last activity in every
// namespace, listed once, within --claim-ttl (as the reclaim index): a
// cluster of very many pods holds up the IDLE policies waiting on it that
// long at most. When listing it fails, it is nil, and namespaces are read
// one by one.
func (x *Activity) sweepIndex(ctx context.Context) map[string]created {
	x.once.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, x.reads.ClaimTTL)
		defer cancel()
		index, err := x.reads.listCreated(ctx, metav1.NamespaceAll)
		if err != nil {
			x.reads.Log.Warn("reading the last activity namespace by namespace", "error",
				fmt.Errorf("list for the sweep's index of the last activity: %w", err).Error())
			return
		}
		x.index = index
	})
	return x.index
}

// listCreated lists the activity resources in namespace (all, when
// metav1.NamespaceAll), paged and metadata only, decoded one object at a
// time (see cluster.EachMetadata), and keeps the newest creation in each
// namespace.
func (r Reads) listCreated(ctx context.Context, namespace string) (map[string]created, error) {
	newest := map[string]created{}
	for _, res := range activityResources {
		list := func() *rest.Request {
			return r.RESTClient(res.resource.GroupVersion()).Get().Namespace(namespace).Resource(res.resource.Resource)
		}
		err := cluster.EachMetadata(ctx, r.PageSize, metav1.ListOptions{}, list, func(o *cluster.ObjectMeta) error {
			m := &o.Metadata
			if at := m.CreationTimestamp.Time; at.After(newest[m.Namespace].at) {
				newest[m.Namespace] = created{at: at, kind: res.kind, name: m.Name}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", res.resource.GroupResource(), err)
		}
	}
	return newest, nil
}

// ExpectAhead counts, of a page of managers, the target namespaces of those
// ours says are of this sweep (its shard) whose last status says they read the activity (see
// readsActivity), before any of them is evaluated: a sweep that will read
// more than ActivityIndexAfter namespaces lists the index at the first,
// rather than reading that many one by one first (128 requests a sweep,
// where the index costs a page of each of the four per 500 objects).
func (x *Activity) ExpectAhead(page *listpage.ManagerPage, now time.Time, ours func(types.UID) bool, trusted []string) {
	for i := range page.Items {
		it := &page.Items[i]
		if !readsActivity(it.Status, now) || !ours(it.Metadata.UID) {
			continue
		}
		// A manager may read another namespace than its own only from a
		// trusted one.
		if target := listedTarget(it); target == it.Metadata.Namespace || slices.Contains(trusted, it.Metadata.Namespace) {
			x.expect(target)
		}
	}
}

// listedTarget is the namespace a listed manager targets, as
// policy.Manager's Target says (a rule's is none, and is not counted here).
func listedTarget(it *listpage.ListedItem) string {
	if spec, ok := it.Spec.(map[string]any); ok {
		if ns, ok := spec["namespace"].(string); ok && ns != "" {
			return ns
		}
	}
	return it.Metadata.Name
}

// readsActivity reports whether a manager's status (under nsman's CRD) says
// that an IDLE policy read its target's activity in the last sweep (the
// last activity it names is something created in the namespace), or will
// in this one (it is due).
func readsActivity(status []byte, now time.Time) bool {
	if !bytes.Contains(status, []byte(`"lastActivity"`)) {
		return false
	}
	var st struct {
		LastActivity *report.LastActivity `json:"lastActivity"`
		NextDue      *metav1.Time         `json:"nextDue"`
	}
	if json.Unmarshal(status, &st) != nil || st.LastActivity == nil {
		return false
	}
	read := st.LastActivity.What != policy.ActivityCreated && st.LastActivity.What != policy.ActivityTouched
	return read || st.NextDue != nil && !st.NextDue.After(now)
}
