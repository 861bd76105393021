package probe

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/policy/patch"
)

// awakeBodies are the discovery documents of clustertest and, in namespace
// ns (and cluster-wide), Deployments, CronJobs and ReplicaSets awake and
// asleep: web scaled up by kubectl after nsman put it to sleep (an older
// owner of its replicas too), api new, pinned kept awake, db asleep; a
// CronJob resumed by Argo CD; a ReplicaSet its Deployment controls, and one
// of its own; a Service parked made a LoadBalancer again by hand, and a
// ClusterIP. ScaledObjects are not served.
func awakeBodies(ns string) map[string]string {
	item := func(name, labels, annotations, owners, managed, spec string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q,"namespace":%q,"labels":{%s},"annotations":{%s},"ownerReferences":[%s],"managedFields":[%s]},"spec":{%s}}`,
			name, ns, labels, annotations, owners, managed, spec)
	}
	managed := func(manager, at, fields string) string {
		return fmt.Sprintf(`{"manager":%q,"operation":"Update","time":%q,"fieldsType":"FieldsV1","fieldsV1":%s}`, manager, at, fields)
	}
	replicasOwned := `{"f:spec":{"f:replicas":{},"f:template":{}}}`
	record := fmt.Sprintf("%q:%q", status.ReplicasAnnotation, "2")
	list := func(items ...string) string {
		return `{"kind":"List","apiVersion":"v1","metadata":{},"items":[` + strings.Join(items, ",") + `]}`
	}
	deployments := list(
		item("web", "", record, "", managed("kubectl-client-side-apply", "2026-11-20T10:00:00Z", replicasOwned)+","+managed("nsman", "2026-11-27T19:00:00Z", `{"f:metadata":{"f:annotations":{}}}`)+","+managed("kubectl", "2026-11-27T22:00:00Z", replicasOwned), `"replicas":3`),
		item("api", "", "", "", managed("helm", "2026-11-20T10:00:00Z", replicasOwned), `"replicas":1`),
		item("pinned", fmt.Sprintf("%q:%q", status.KeepAwakeLabel, "true"), "", "", "", `"replicas":1`),
		item("db", "", record, "", "", `"replicas":0`),
	)
	cronjobs := list(item("report", "", fmt.Sprintf("%q:%q", status.SuspendAnnotation, "false"), "", managed("argocd-application-controller", "2026-11-27T23:00:00Z", `{"f:spec":{"f:suspend":{}}}`), `"suspend":false`))
	replicasets := list(
		item("web-1", "", "", `{"controller":true,"kind":"Deployment","name":"web","uid":"u","apiVersion":"apps/v1"}`, "", `"replicas":3`),
		item("solo", "", "", "", "", `"replicas":1`),
	)
	services := list(
		item("edge", "", fmt.Sprintf("%q:%q", status.LoadBalancerAnnotation, `{"type":"LoadBalancer"}`), "", managed("by-hand", "2026-11-27T23:00:00Z", `{"f:spec":{"f:type":{}}}`), `"type":"LoadBalancer"`),
		item("internal", "", "", "", "", `"type":"ClusterIP"`),
	)
	empty := list()
	bodies := clustertest.DiscoveryBodies()
	for _, prefix := range []string{"/namespaces/" + ns, ""} {
		bodies["/apis/apps/v1"+prefix+"/deployments"] = deployments
		bodies["/apis/apps/v1"+prefix+"/statefulsets"] = empty
		bodies["/apis/apps/v1"+prefix+"/replicasets"] = replicasets
		bodies["/apis/batch/v1"+prefix+"/cronjobs"] = cronjobs
		bodies["/api/v1"+prefix+"/services"] = services
		bodies["/api/v1"+prefix+"/replicationcontrollers"] = empty
		bodies["/apis/argoproj.io/v1alpha1"+prefix+"/rollouts"] = empty
		bodies["/apis/example.com/v1"+prefix+"/widgets"] = clustertest.Forbidden
		bodies["/apis/other.example.com/v1"+prefix+"/widgets"] = empty
	}
	return bodies
}

func awakeReads(kube kubernetes.Interface) Reads {
	return Reads{Reader: cluster.Reader{Clients: cluster.Clients{Kube: kube}, PageSize: 500, Log: slog.New(slog.DiscardHandler)}, ClaimTTL: time.Minute}
}

func TestAwakeIn(t *testing.T) {
	kube := clustertest.APIServer(t, awakeBodies("dev-7"))
	for _, tt := range []struct {
		name  string
		kinds []string
		to    policy.SleepTo
		want  []string
	}{
		{name: "every kind", want: []string{"argocd-application-controller: CronJob/report", "kubectl: Deployment/web", "new: Deployment/api, ReplicaSet/solo"}},
		{name: "Deployments", kinds: []string{"deployment"}, want: []string{"kubectl: Deployment/web", "new: Deployment/api"}},
		{name: "CronJobs by group", kinds: []string{"CronJob.batch"}, want: []string{"argocd-application-controller: CronJob/report"}},
		{name: "a kind of another group", kinds: []string{"CronJob.example.com"}, want: []string{}},
		// A sleep to 1 replica leaves api and solo, at 1, asleep; web, at
		// 3, is above it, and a CronJob has no replicas to keep.
		{name: "every kind, to 1 replica", to: policy.SleepTo{Replicas: 1}, want: []string{"argocd-application-controller: CronJob/report", "kubectl: Deployment/web"}},
		{name: "every kind, to 3 replicas", to: policy.SleepTo{Replicas: 3}, want: []string{"argocd-application-controller: CronJob/report"}},
		// A LoadBalancer is awake to a sleep that parks them alone, whatever
		// kinds its selectors name.
		{name: "Deployments, with load balancers", kinds: []string{"deployment"}, to: policy.SleepTo{LoadBalancers: true},
			want: []string{"by-hand: Service/edge", "kubectl: Deployment/web", "new: Deployment/api"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, more, err := NewAwake(awakeReads(kube), &Kinds{}).In(t.Context(), "dev-7", tt.kinds, tt.to)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) || more {
				t.Errorf("awake %q (more %v), want %q", got, more, tt.want)
			}
		})
	}
}

// Past AwakeIndexAfter namespaces, Awake lists each kind once,
// cluster-wide, and answers from that list.
func TestAwakeIndex(t *testing.T) {
	bodies := awakeBodies("dev-7")
	var mu sync.Mutex
	clusterWide := 0
	kube := clustertest.APIServer(t, bodies, func(path string) {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasSuffix(path, "/deployments") && !strings.Contains(path, "/namespaces/") {
			clusterWide++
		}
	})
	a := NewAwake(awakeReads(kube), &Kinds{})
	ahead := NewAwake(awakeReads(kube), &Kinds{})
	ahead.IndexAll()
	if got, _, err := ahead.In(t.Context(), "dev-7", []string{"Deployment"}, policy.SleepTo{}); err != nil || len(got) != 2 || clusterWide != 1 {
		t.Fatalf("indexing all: awake %q (%v), Deployments listed cluster-wide %d times; want 2 causes from one cluster-wide list", got, err, clusterWide)
	}
	// The index keeps what is awake for every policy: a sleep to 1
	// replica finds api, at 1, asleep.
	if got, _, err := ahead.In(t.Context(), "dev-7", []string{"Deployment"}, policy.SleepTo{Replicas: 1}); err != nil || !slices.Equal(got, []string{"kubectl: Deployment/web"}) || clusterWide != 1 {
		t.Fatalf("indexing all, to 1 replica: awake %q (%v), Deployments listed cluster-wide %d times; want web alone, from the same list", got, err, clusterWide)
	}
	clusterWide = 0
	for i := range AwakeIndexAfter + 5 {
		ns := fmt.Sprintf("other-%d", i)
		if i == AwakeIndexAfter+4 {
			ns = "dev-7"
		}
		got, _, err := a.In(t.Context(), ns, []string{"Deployment"}, policy.SleepTo{})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 2, false: 0}[ns == "dev-7"]; len(got) != want {
			t.Errorf("%s: awake %q, want %d causes", ns, got, want)
		}
	}
	if clusterWide != 1 {
		t.Errorf("Deployments listed cluster-wide %d times, want once", clusterWide)
	}
}

// A read keeps at most MaxAwakeIn workloads awake of a namespace, namespace
// by namespace as in the index, and says there were more: the workloads a
// tenant wakes size no read. Read alone, the namespace's list stops there.
func TestAwakeInBounded(t *testing.T) {
	bodies := awakeBodies("dev-7")
	items := make([]string, 0, MaxAwakeIn+50)
	for i := range MaxAwakeIn + 50 {
		items = append(items, fmt.Sprintf(`{"metadata":{"name":"w%03d","namespace":"dev-7","annotations":{%q:"1"},"managedFields":[{"manager":"fighter-%03d","operation":"Update",`+
			`"time":"2026-11-27T22:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}}]},"spec":{"replicas":1}}`, i, status.ReplicasAnnotation, i))
	}
	many := `{"kind":"List","apiVersion":"v1","metadata":{},"items":[` + strings.Join(items, ",") + `]}`
	bodies["/apis/apps/v1/namespaces/dev-7/deployments"], bodies["/apis/apps/v1/deployments"] = many, many
	var mu sync.Mutex
	listed := map[string]int{}
	kube := clustertest.APIServer(t, bodies, func(path string) {
		mu.Lock()
		defer mu.Unlock()
		listed[path]++
	})
	indexed := NewAwake(awakeReads(kube), &Kinds{})
	indexed.IndexAll()
	for name, a := range map[string]*Awake{"by namespace": NewAwake(awakeReads(kube), &Kinds{}), "by the index": indexed} {
		got, more, err := a.In(t.Context(), "dev-7", []string{"Deployment"}, policy.SleepTo{})
		if err != nil {
			t.Fatal(err)
		}
		named := 0
		for _, line := range got {
			named += strings.Count(line, "Deployment/")
		}
		if named != MaxAwakeIn || !more {
			t.Errorf("%s: %d Deployments named (more %v), want %d and more", name, named, more, MaxAwakeIn)
		}
	}
	// Read alone, the namespace is read no further than its Deployments,
	// listed first: no kind after them is.
	mu.Lock()
	defer mu.Unlock()
	for path := range listed {
		if strings.Contains(path, "/namespaces/dev-7/") && !strings.HasSuffix(path, "/deployments") {
			t.Errorf("listed %s after the namespace's Deployments said more than %d awake", path, MaxAwakeIn)
		}
	}
}

// The index's bound counts the workloads it keeps: those of a namespace
// past its MaxAwakeIn are not, so that one namespace with very many awake
// keeps no other's from the index (before, they counted, and gave the
// index up for every namespace).
func TestAwakeIndexCountsWhatItKeeps(t *testing.T) {
	bodies := awakeBodies("dev-7")
	items := make([]string, 0, MaxAwakeIn+51)
	for i := range MaxAwakeIn + 50 {
		items = append(items, fmt.Sprintf(`{"metadata":{"name":"w%03d","namespace":"dev-7","annotations":{%q:"1"}},"spec":{"replicas":1}}`, i, status.ReplicasAnnotation))
	}
	items = append(items, fmt.Sprintf(`{"metadata":{"name":"late","namespace":"dev-8","annotations":{%q:"1"}},"spec":{"replicas":1}}`, status.ReplicasAnnotation))
	bodies["/apis/apps/v1/deployments"] = `{"kind":"List","apiVersion":"v1","metadata":{},"items":[` + strings.Join(items, ",") + `]}`
	a := NewAwake(awakeReads(clustertest.APIServer(t, bodies)), &Kinds{})
	index, err := a.list(t.Context(), metav1.NamespaceAll, MaxAwakeIn+10, nil)
	if err != nil {
		t.Fatalf("index of %d kept, bounded at %d: %v", MaxAwakeIn+1, MaxAwakeIn+10, err)
	}
	if in := index["dev-7"]; in == nil || len(in.found) != MaxAwakeIn || !in.more {
		t.Errorf("dev-7 in the index: %+v; want %d kept and more", in, MaxAwakeIn)
	}
	if in := index["dev-8"]; in == nil || len(in.found) != 1 || in.found[0].Name != "late" || in.more {
		t.Errorf("dev-8 in the index: %+v; want Deployment/late alone", in)
	}
}

// Managers listed whose status says their target is asleep are counted
// ahead: past AwakeIndexAfter of this sweep's, the index answers from the
// first ask; those of other shards do not count.
func TestAwakeExpectAhead(t *testing.T) {
	page := &listpage.ManagerPage{}
	for i := range 2 * (AwakeIndexAfter + 1) {
		var it listpage.ListedItem
		it.Metadata.UID = types.UID(fmt.Sprintf("m-%d", i))
		it.Status = []byte(`{"state":"asleep","asleep":{"policy":"nights","since":"2026-11-27T19:00:00Z"}}`)
		page.Items = append(page.Items, it)
	}
	ours := func(uid types.UID) bool {
		return strings.HasSuffix(string(uid), "0") || strings.HasSuffix(string(uid), "2")
	}
	for _, tt := range []struct {
		name  string
		items int
		want  bool
	}{
		{name: "few", items: AwakeIndexAfter + 1},
		{name: "many, few of them this sweep's", items: 2 * (AwakeIndexAfter + 1)},
	} {
		a := NewAwake(awakeReads(nil), &Kinds{})
		a.ExpectAhead(&listpage.ManagerPage{Items: page.Items[:tt.items]}, ours)
		if got := a.indexed.Load(); got != tt.want {
			t.Errorf("%s: indexed %v, want %v", tt.name, got, tt.want)
		}
	}
	a := NewAwake(awakeReads(nil), &Kinds{})
	a.ExpectAhead(page, func(types.UID) bool { return true })
	if !a.indexed.Load() {
		t.Errorf("%d managers asleep: not indexed", len(page.Items))
	}
	quiet := NewAwake(awakeReads(nil), &Kinds{})
	for range 3 {
		quiet.ExpectAhead(&listpage.ManagerPage{Items: []listpage.ListedItem{{Status: []byte(`{"state":"waiting","message":"asleep since"}`)}}}, func(types.UID) bool { return true })
	}
	if quiet.indexed.Load() || quiet.ahead.Load() != 0 {
		t.Errorf("managers awake counted: %d", quiet.ahead.Load())
	}
}

// sideBySide is an observer of clustertest.APIServer that holds the
// request role calls the held one until one it calls the releasing one
// arrives, or a while passes: asked one after the other, the held request
// waits that while, and the test fails. role is given the path and how
// many requests it named before.
type sideBySide struct {
	role     func(path string, before int) sideRole
	released chan struct{}
	once     sync.Once
	mu       sync.Mutex
	before   int
	waited   bool
}

type sideRole int

const (
	sideNone sideRole = iota
	sideHeld
	sideReleases
)

func newSideBySide(role func(path string, before int) sideRole) *sideBySide {
	return &sideBySide{role: role, released: make(chan struct{})}
}

func (s *sideBySide) observe(path string) {
	s.mu.Lock()
	role := s.role(path, s.before)
	if role != sideNone {
		s.before++
	}
	s.mu.Unlock()
	switch role {
	case sideReleases:
		s.once.Do(func() { close(s.released) })
	case sideHeld:
		select {
		case <-s.released:
		case <-time.After(3 * time.Second):
			s.mu.Lock()
			s.waited = true
			s.mu.Unlock()
		}
	}
}

// sequential reports whether the held request waited the while out.
func (s *sideBySide) sequential() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waited
}

// The sweep's index lists the kinds side by side: a sweep while asleep
// waits for its longest list, not for their sum. The Deployments' list
// (the first kind) is held until the CronJobs' arrives.
func TestAwakeIndexListsKindsSideBySide(t *testing.T) {
	s := newSideBySide(func(path string, _ int) sideRole {
		switch path {
		case "/apis/apps/v1/deployments":
			return sideHeld
		case "/apis/batch/v1/cronjobs":
			return sideReleases
		}
		return sideNone
	})
	a := NewAwake(awakeReads(clustertest.APIServer(t, awakeBodies("dev-7"), s.observe)), &Kinds{})
	a.IndexAll()
	got, _, err := a.In(t.Context(), "dev-7", nil, policy.SleepTo{})
	if err != nil {
		t.Fatal(err)
	}
	if s.sequential() {
		t.Error("the Deployments' list waited out the CronJobs': the index listed the kinds one after the other")
	}
	// Merged in the kinds' order, as one list after the other keeps them.
	if want := []string{"argocd-application-controller: CronJob/report", "kubectl: Deployment/web", "new: Deployment/api, ReplicaSet/solo"}; !slices.Equal(got, want) {
		t.Errorf("awake from the index: %q, want %q", got, want)
	}
}

// Side by side, the index keeps of a namespace what one list after the
// other keeps: the first kinds' first MaxAwakeIn, and says there are more.
func TestAwakeIndexMergesInTheKindsOrder(t *testing.T) {
	bodies := awakeBodies("dev-7")
	items := make([]string, 0, MaxAwakeIn-1)
	for i := range MaxAwakeIn - 1 {
		items = append(items, fmt.Sprintf(`{"metadata":{"name":"w%03d","namespace":"dev-7"},"spec":{"replicas":1}}`, i))
	}
	bodies["/apis/apps/v1/deployments"] = `{"kind":"List","apiVersion":"v1","metadata":{},"items":[` + strings.Join(items, ",") + `]}`
	a := NewAwake(awakeReads(clustertest.APIServer(t, bodies)), &Kinds{})
	index, err := a.list(t.Context(), metav1.NamespaceAll, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := index["dev-7"]
	if in == nil || len(in.found) != MaxAwakeIn || !in.more {
		t.Fatalf("dev-7 in the index: %+v; want %d kept and more", in, MaxAwakeIn)
	}
	// 99 Deployments, then the first of the next kinds listed in order:
	// StatefulSets (none), CronJobs (report), then ReplicaSets (solo) past
	// the bound.
	if last := in.found[MaxAwakeIn-1]; last.Kind != "CronJob" || last.Name != "report" {
		t.Errorf("the last kept: %+v, want CronJob/report", last)
	}
}

// A sweep that will answer from its index lists it when it knows, beside
// its other reads (Prefetch); one that will not lists nothing ahead.
func TestAwakePrefetch(t *testing.T) {
	var mu sync.Mutex
	listed := map[string]int{}
	kube := clustertest.APIServer(t, awakeBodies("dev-7"), func(path string) {
		mu.Lock()
		defer mu.Unlock()
		listed[path]++
	})
	count := func(p string) int {
		mu.Lock()
		defer mu.Unlock()
		return listed[p]
	}
	byNamespace := NewAwake(awakeReads(kube), &Kinds{})
	byNamespace.Prefetch(t.Context())
	if n := count("/apis/apps/v1/deployments"); n != 0 {
		t.Errorf("a sweep reading namespace by namespace listed the Deployments cluster-wide %d times ahead", n)
	}
	a := NewAwake(awakeReads(kube), &Kinds{})
	a.IndexAll()
	a.Prefetch(t.Context())
	if n := count("/apis/apps/v1/deployments"); n != 1 {
		t.Fatalf("Deployments listed cluster-wide %d times by Prefetch, want once", n)
	}
	if _, _, err := a.In(t.Context(), "dev-7", nil, policy.SleepTo{}); err != nil {
		t.Fatal(err)
	}
	if n := count("/apis/apps/v1/deployments"); n != 1 {
		t.Errorf("Deployments listed cluster-wide %d times after In, want once: In reads the index Prefetch listed", n)
	}
}

// sleeperBodies are awakeBodies with Sleepers (sleep.example.com) in ns
// and cluster-wide: on, patched by nsman and changed back by hand; off,
// as the patch makes it; fresh, created since, never patched; kept,
// labelled to stay awake.
func sleeperBodies(ns string) map[string]string {
	bodies := awakeBodies(ns)
	item := func(name, labels, annotations, managed, spec string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q,"namespace":%q,"labels":{%s},"annotations":{%s},"managedFields":[%s]},"spec":{%s}}`, name, ns, labels, annotations, managed, spec)
	}
	record := fmt.Sprintf("%q:%q", status.PatchedAnnotation, `{"patch":{"spec":{"suspend":true}},"inverse":{"spec":{"suspend":null}}}`)
	byHand := `{"manager":"by-hand","operation":"Update","time":"2026-11-27T23:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:suspend":{}}}}`
	sleepers := `{"kind":"List","apiVersion":"v1","metadata":{},"items":[` + strings.Join([]string{
		item("on", "", record, byHand, `"suspend":false`),
		item("off", "", record, "", `"suspend":true`),
		item("fresh", "", "", "", `"interval":"5m"`),
		item("kept", fmt.Sprintf("%q:%q", status.KeepAwakeLabel, "true"), "", "", ""),
	}, ",") + `]}`
	for _, prefix := range []string{"/namespaces/" + ns, ""} {
		bodies["/apis/sleep.example.com/v1"+prefix+"/sleepers"] = sleepers
	}
	return bodies
}

// suspendSleepers is a sleep that suspends Sleepers.
var suspendSleepers = policy.SleepTo{Patches: []patch.Patch{{Kind: "Sleeper", Group: "sleep.example.com", Merge: map[string]any{"spec": map[string]any{"suspend": true}}}}}

// A sleep's patch finds awake the objects of its kind not as it makes
// them, whatever kinds its selectors name, with who changed them back; a
// namespace read alone lists the kind in it, and past AwakeIndexAfter
// namespaces the kind is listed once, cluster-wide.
func TestAwakePatched(t *testing.T) {
	var mu sync.Mutex
	clusterWide, inNamespace := 0, 0
	kube := clustertest.APIServer(t, sleeperBodies("dev-7"), func(path string) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case !strings.HasSuffix(path, "/sleepers"):
		case strings.Contains(path, "/namespaces/"):
			inNamespace++
		default:
			clusterWide++
		}
	})
	want := []string{"by-hand: Sleeper/on", "new: Sleeper/fresh"}
	a := NewAwake(awakeReads(kube), &Kinds{})
	if got, more, err := a.In(t.Context(), "dev-7", []string{"CronJob.example.com"}, suspendSleepers); err != nil || more || !slices.Equal(got, want) || inNamespace != 1 {
		t.Fatalf("read alone: awake %q (more %t, %v), %d lists in the namespace; want %q from one", got, more, err, inNamespace, want)
	}
	if got, _, err := a.In(t.Context(), "dev-7", []string{"CronJob.example.com"}, policy.SleepTo{}); err != nil || len(got) != 0 {
		t.Errorf("a sleep without the patch: awake %q (%v), want none", got, err)
	}
	indexed := NewAwake(awakeReads(kube), &Kinds{})
	indexed.IndexAll()
	inNamespace = 0
	for i := range AwakeIndexAfter + 5 {
		ns := fmt.Sprintf("other-%d", i)
		if i == 3 {
			ns = "dev-7"
		}
		got, _, err := indexed.In(t.Context(), ns, []string{"CronJob.example.com"}, suspendSleepers)
		if err != nil {
			t.Fatal(err)
		}
		if ns == "dev-7" && !slices.Equal(got, want) || ns != "dev-7" && len(got) != 0 {
			t.Errorf("%s: awake %q", ns, got)
		}
	}
	if clusterWide != 1 || inNamespace != 0 {
		t.Errorf("Sleepers listed cluster-wide %d times and in a namespace %d times; want once cluster-wide", clusterWide, inNamespace)
	}
}
