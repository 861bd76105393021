package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/report"
)

// The IDLE benchmark (issue 25): N managers, half of them IDLE, in a control
// plane of its own per size.
const (
	// idleFor is the IDLE managers' idleSeconds. Their namespaces are
	// seeded, then left until they are idleFor old, then given a
	// ControllerRevision each: every sweep reads their activity and keeps
	// waiting, until the first revision is idleFor old. The sweeps measured
	// end before then, or the run fails. At 1,000 managers they take a
	// tenth of it; at 10,000, on 2 CPUs, about all of it.
	idleFor = 60 * time.Second
	// idleMaxSize is the largest size the part runs at, and the one its
	// targets are set at: at 10,000 managers the sweeps need an idleFor of
	// some 2 minutes, whose wait, untimed, would add more to make bench
	// than its 1,000 and 10,000 managers' parts together.
	idleMaxSize = 1000
	// idlePrefix names the IDLE managers, their namespaces and their set;
	// idleTTLPrefix the others (TTL, not due).
	idlePrefix    = "idle"
	idleTTLPrefix = "ttl"
	// revisionName is the ControllerRevision each IDLE namespace holds.
	revisionName = "bench"
)

// activityResources are what an IDLE condition counts the creation of as
// activity, in the order nsman lists them (internal/probe/activity.go).
var activityResources = []schema.GroupVersionResource{
	appsv1.SchemeGroupVersion.WithResource("replicasets"),
	appsv1.SchemeGroupVersion.WithResource("controllerrevisions"),
	batchv1.SchemeGroupVersion.WithResource("jobs"),
	corev1.SchemeGroupVersion.WithResource("pods"),
}

// idleFloorLabel is the label of the read floor with the activity lists.
const idleFloorLabel = floorPlusPrefix + "paged LIST of pods, ReplicaSets, ControllerRevisions, Jobs"

// measureIdle starts a control plane, seeds n/2 IDLE managers, then n/2 with
// a TTL not due, each in its own namespace, waits until the IDLE namespaces
// are idleFor old, creates a ControllerRevision in each, and measures, in
// order: nsman's first sweep, then, interleaved, the read floor, the read
// floor with the activity lists and a no-op sweep; all before the first
// revision is idleFor old.
func measureIdle(t *testing.T, bin string, n int) ([]measurement, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	s := startSession(ctx, t, bin, n)
	defer s.c.Stop()

	idle := n / 2
	began := time.Now()
	if err := s.seed.seed(ctx, idlePrefix, idlePrefix, idle, func(int) kind { return idleActive }); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if err := s.seed.seed(ctx, idleTTLPrefix, idleTTLPrefix, n-idle, func(int) kind { return ttlNotDue }); err != nil {
		t.Fatalf("seed: %v", err)
	}
	s.step("seeded %d IDLE and %d TTL managers in %s", idle, n-idle, time.Since(began).Round(time.Millisecond))

	// Until its namespace is idleFor old, a sweep reads nothing for an
	// IDLE manager: wait for the youngest, as the API server stamped it.
	youngest, _, err := createdRange(ctx, s.c.AdminConfig, corev1.SchemeGroupVersion.WithResource("namespaces"), idle)
	if err != nil {
		t.Fatal(err)
	}
	wait := time.Until(youngest.Add(idleFor))
	s.step("waiting %s, until the IDLE namespaces are %s old", wait.Round(time.Millisecond), idleFor)
	select {
	case <-time.After(wait):
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}

	began = time.Now()
	if err := inParallel(ctx, seedConcurrency, idle, func(ctx context.Context, i int) error {
		return s.seed.revision(ctx, seededName(idlePrefix, i))
	}); err != nil {
		t.Fatal(err)
	}
	_, oldest, err := createdRange(ctx, s.c.AdminConfig, appsv1.SchemeGroupVersion.WithResource("controllerrevisions"), idle)
	if err != nil {
		t.Fatal(err)
	}
	// From then on, an IDLE policy holds and its sweep would DELETE.
	holds := oldest.Add(idleFor)
	s.step("created %d ControllerRevisions in %s; the IDLE policies hold at %s, in %s",
		idle, time.Since(began).Round(time.Millisecond), holds.Format(time.RFC3339), time.Until(holds).Round(time.Millisecond))
	// inTime fails the run when a sweep ended once the IDLE policies
	// held: it measured something else than waiting managers.
	inTime := func(m measurement) {
		if left := time.Until(holds); left <= 0 {
			t.Fatalf("N=%d: %s ended %s after the first ControllerRevision was %s old, when the IDLE policies hold: it did not measure waiting managers; the part needs idleFor > %s",
				n, m.What, (-left).Round(time.Millisecond), idleFor, time.Since(oldest).Round(time.Second))
		}
	}

	if _, err := s.audit.next(ctx); err != nil {
		t.Fatal(err)
	}
	first := s.sweepRow("nsman sweep, first (records status)")
	inTime(first)
	if got := first.States[report.StateWaiting]; got != n {
		t.Errorf("N=%d first sweep: %d waiting, want %d (%v)", n, got, n, first.States)
	}
	if err := countedRevisions(ctx, s, oldest, idle); err != nil {
		t.Error(err)
	}

	var floors, pluses, noops []measurement
	for range readRounds {
		floors = append(floors, s.readFloor())
		pluses = append(pluses, s.readFloorPlus(idleFloorLabel, func() (string, error) {
			return floorActivityLists(ctx, s.sa)
		}))
		m := s.noop(noopLabel)
		inTime(m)
		if m.count("list", "controllerrevisions") == 0 {
			t.Errorf("N=%d %s: listed no ControllerRevisions: it did not read the IDLE managers' activity (%s)", n, m.What, describe(m.Audited))
		}
		noops = append(noops, m)
	}
	noop := median(noops)
	noop.Note += fmt.Sprintf("; the last ended %.0f s before the IDLE policies hold", time.Until(holds).Seconds())
	s.rows = append(s.rows, median(floors), median(pluses), noop)
	s.step("the IDLE part took %s, its control plane's start included", time.Since(s.began).Round(time.Second))
	return s.rows, s.version
}

// idleSizes are the sizes of sizes the IDLE part runs at: up to
// idleMaxSize.
func idleSizes(sizes []int) []int {
	var out []int
	for _, n := range sizes {
		if n <= idleMaxSize {
			out = append(out, n)
		}
	}
	return out
}

// createdRange lists resource, metadata only, as the admin (not audited
// for nsman's ServiceAccount), and returns the newest and the oldest
// creation among the IDLE namespaces or the objects in them, of which there
// must be want.
func createdRange(ctx context.Context, cfg *rest.Config, resource schema.GroupVersionResource, want int) (newest, oldest time.Time, err error) {
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return newest, oldest, err
	}
	opts := metav1.ListOptions{Limit: pageSize}
	got := 0
	for {
		list, err := meta.Resource(resource).List(ctx, opts)
		if err != nil {
			return newest, oldest, fmt.Errorf("list %s: %w", resource.GroupResource(), err)
		}
		for _, m := range list.Items {
			name := m.Name
			if resource.Resource != "namespaces" {
				name = m.Namespace
			}
			if !strings.HasPrefix(name, idlePrefix+"-") {
				continue
			}
			got++
			at := m.CreationTimestamp.Time
			if at.After(newest) {
				newest = at
			}
			if oldest.IsZero() || at.Before(oldest) {
				oldest = at
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	if got != want {
		return newest, oldest, fmt.Errorf("%d %s in the IDLE namespaces, want %d", got, resource.GroupResource(), want)
	}
	return newest, oldest, nil
}

// countedRevisions checks that the first sweep counted, for every IDLE
// manager, its namespace's ControllerRevision as the last activity: it
// read the activity, and the later sweeps find the same.
func countedRevisions(ctx context.Context, s *session, oldest time.Time, want int) error {
	list, err := s.env.Dynamic.Resource(cluster.ManagerResource).List(ctx, metav1.ListOptions{LabelSelector: setLabel + "=" + idlePrefix})
	if err != nil {
		return err
	}
	var wrong []string
	for _, m := range list.Items {
		at, _, _ := unstructured.NestedString(m.Object, "status", "lastActivity", "at")
		what, _, _ := unstructured.NestedString(m.Object, "status", "lastActivity", "what")
		if t, err := time.Parse(time.RFC3339, at); err != nil || t.Before(oldest) {
			wrong = append(wrong, fmt.Sprintf("%s: %q at %q", m.GetName(), what, at))
		}
	}
	if len(list.Items) != want || len(wrong) > 0 {
		return fmt.Errorf("N=%d: after the first sweep, %d IDLE managers, want %d; %d of them do not record their ControllerRevision as the last activity (status.lastActivity), e.g. %s",
			s.n, len(list.Items), want, len(wrong), strings.Join(wrong[:min(len(wrong), 3)], "; "))
	}
	return nil
}

// floorActivityLists lists, cluster-wide, paged and metadata only, what
// IDLE counts as activity: what nsman reads past probe.ActivityIndexAfter
// namespaces.
func floorActivityLists(ctx context.Context, cfg *rest.Config) (string, error) {
	var counts []string
	for _, r := range activityResources {
		n, err := resourcePages(ctx, cfg, r, metav1.ListOptions{})
		if err != nil {
			return "", err
		}
		counts = append(counts, fmt.Sprintf("%d %s", n, r.Resource))
	}
	return strings.Join(counts, ", "), nil
}
