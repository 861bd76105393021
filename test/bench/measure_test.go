package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// pageSize is what nsman pages its lists by (sweep.DefaultPageSize), so that
// the floor makes as many list requests.
const pageSize = sweep.DefaultPageSize

// floorConcurrency is nsman's default --concurrency; the floors use as many
// workers.
const floorConcurrency = sweep.DefaultConcurrency

// measurement is one row of the table.
type measurement struct {
	// ID numbers the row in the document (render sets it).
	ID   int
	N    int
	What string
	Wall time.Duration
	// Audited are the requests the API server logged for nsman's
	// ServiceAccount during the measurement, by "verb resource".
	Audited map[string]int
	// HTTP are nsman's own counts by method (summary.requests), with the
	// discovery request the audit log does not show.
	HTTP map[string]int
	// MaxRSS is the child's peak resident set in KiB; zero for in-process.
	MaxRSS int64
	// PeakRSS, in a row that is the median of several runs, is the highest
	// MaxRSS among them.
	PeakRSS int64
	// Runs, in a row that is the median of several runs, are their wall
	// times in the order run.
	Runs []time.Duration
	// States counts the managers by state, for sweeps.
	States map[report.State]int
	// TrafficQueries are a sweep's traffic queries by result
	// (summary.trafficQueries): IDLE from traffic asks one per source and
	// window.
	TrafficQueries map[string]int
	Note           string
	// Load is the 1-minute load average after the measurement.
	Load string
}

func (m measurement) total() int {
	n := 0
	for _, v := range m.Audited {
		n += v
	}
	return n
}

// isRead says whether an audited "verb resource" is a read: an access
// review (a SLEEP asks one per kind it finds) is created, but stores
// nothing.
func isRead(verbResource string) bool {
	switch verb, _, _ := strings.Cut(verbResource, " "); verb {
	case "get", "list", "watch":
		return true
	}
	return verbResource == "create selfsubjectaccessreviews"
}

// writes counts the audited requests that are not reads.
func (m measurement) writes() int {
	n := 0
	for k, v := range m.Audited {
		if !isRead(k) {
			n += v
		}
	}
	return n
}

// reads counts the audited reads.
func (m measurement) reads() int { return m.total() - m.writes() }

func (m measurement) count(verb, resource string) int { return m.Audited[verb+" "+resource] }

// auditCursor reads, from the audit log, the requests a user made since the
// last call.
type auditCursor struct {
	c    *cluster.Cluster
	user string
	seen int
}

func (a *auditCursor) next(ctx context.Context) (map[string]int, error) {
	reqs, err := a.c.AuditedRequests(ctx, a.user)
	if err != nil {
		return nil, err
	}
	if len(reqs) < a.seen {
		return nil, fmt.Errorf("audit log holds %d requests of %s, fewer than the %d read before: it was rotated or truncated", len(reqs), a.user, a.seen)
	}
	out := map[string]int{}
	for _, r := range reqs[a.seen:] {
		res := r.Resource
		if r.Subresource != "" {
			res += "/" + r.Subresource
		}
		out[r.Verb+" "+res]++
	}
	a.seen = len(reqs)
	return out, nil
}

// floorLists is the read floor: one paged LIST of every manager and one of
// every namespace (metadata only), by a minimal client.
func floorLists(ctx context.Context, cfg *rest.Config) (managers, namespaces int, err error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, 0, err
	}
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		list, err := dyn.Resource(nsmancluster.ManagerResource).List(ctx, opts)
		if err != nil {
			return 0, 0, fmt.Errorf("list managers: %w", err)
		}
		managers += len(list.Items)
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	namespaces, err = metadataPages(ctx, cfg, "namespaces", metav1.ListOptions{})
	return managers, namespaces, err
}

// floorPodsList lists, paged and metadata only, the pods that have not
// succeeded: the index nsman's pods checks use past probe.PodIndexAfter.
func floorPodsList(ctx context.Context, cfg *rest.Config) (int, error) {
	return metadataPages(ctx, cfg, "pods", metav1.ListOptions{FieldSelector: "status.phase!=Succeeded"})
}

// metadataPages lists a core resource, metadata only, in pages of pageSize,
// and counts the items.
func metadataPages(ctx context.Context, cfg *rest.Config, resource string, opts metav1.ListOptions) (int, error) {
	return resourcePages(ctx, cfg, corev1.SchemeGroupVersion.WithResource(resource), opts)
}

// resourcePages lists resource, metadata only, in pages of pageSize, and
// counts the items.
func resourcePages(ctx context.Context, cfg *rest.Config, resource schema.GroupVersionResource, opts metav1.ListOptions) (int, error) {
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	n := 0
	opts.Limit = pageSize
	for {
		list, err := meta.Resource(resource).List(ctx, opts)
		if err != nil {
			return 0, fmt.Errorf("list %s: %w", resource.GroupResource(), err)
		}
		n += len(list.Items)
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return n, nil
		}
	}
}

// floorPodsChecks makes the pods check nsman makes for each PODS_SUCCEED
// manager (one list, limit 1), with as many workers as nsman.
func floorPodsChecks(ctx context.Context, cfg *rest.Config, namespaces []string) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return parallel(ctx, len(namespaces), func(ctx context.Context, i int) error {
		_, err := kube.CoreV1().Pods(namespaces[i]).List(ctx, metav1.ListOptions{
			LabelSelector: "app=e2e", FieldSelector: "status.phase!=Succeeded", Limit: 1,
		})
		return err
	})
}

// writeTarget is what a write floor needs of one manager.
type writeTarget struct {
	name, resourceVersion string
	uid                   types.UID
}

// prepareWriteFloor lists the managers of set and their namespaces (not
// timed: a sweep learns the same from its lists).
func prepareWriteFloor(ctx context.Context, cfg *rest.Config, set string) ([]writeTarget, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	namespaces, err := namespaceTargets(ctx, cfg, set)
	if err != nil {
		return nil, err
	}
	uids := map[string]types.UID{}
	for _, ns := range namespaces {
		uids[ns.name] = ns.uid
	}
	list, err := dyn.Resource(nsmancluster.ManagerResource).List(ctx, metav1.ListOptions{LabelSelector: setLabel + "=" + set})
	if err != nil {
		return nil, err
	}
	targets := make([]writeTarget, 0, len(list.Items))
	for _, m := range list.Items {
		targets = append(targets, writeTarget{name: m.GetName(), resourceVersion: m.GetResourceVersion(), uid: uids[m.GetName()]})
	}
	return targets, nil
}

// namespaceTargets lists the namespaces of set: a write floor's targets
// when it writes to namespaces (not timed).
func namespaceTargets(ctx context.Context, cfg *rest.Config, set string) ([]writeTarget, error) {
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	list, err := meta.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).List(ctx, metav1.ListOptions{LabelSelector: setLabel + "=" + set})
	if err != nil {
		return nil, err
	}
	targets := make([]writeTarget, 0, len(list.Items))
	for _, ns := range list.Items {
		targets = append(targets, writeTarget{name: ns.Name, resourceVersion: ns.ResourceVersion, uid: ns.UID})
	}
	return targets, nil
}

// writeKind is which writes writeFloor makes for each manager.
type writeKind int

const (
	// claimDeleteDeactivate: the claim (a status merge patch, conditional
	// on the listed resourceVersion, that sets status.claim alone), the
	// namespace delete and the spec.deactivated merge patch (issue 6's
	// write floor).
	claimDeleteDeactivate writeKind = iota
	// claimDelete: the same claim and the namespace delete (issue 12's
	// write floor). What nsman itself writes is counted from the audit
	// log, not assumed from these.
	claimDelete
)

// writeFloor makes, per manager and with nsman's concurrency, the writes of
// a DELETE that which says: the claim (a merge patch of the status
// subresource conditional on the listed resourceVersion), the namespace
// delete with a UID precondition and background propagation, and with
// claimDeleteDeactivate the spec.deactivated merge patch.
func writeFloor(ctx context.Context, cfg *rest.Config, targets []writeTarget, which writeKind) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	const sweepID = "write-floor"
	return parallel(ctx, len(targets), func(ctx context.Context, i int) error {
		t := targets[i]
		managers := dyn.Resource(nsmancluster.ManagerResource).Namespace(t.name)
		status := status.Status{Progress: status.Progress{Claim: &status.Claim{
			Policy: "cleanup", Action: policy.ActionDelete, Sweep: sweepID, Expires: now.Add(time.Minute), Generation: 1, TargetUID: t.uid,
		}}}
		claim, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": t.resourceVersion}, "status": status})
		if err != nil {
			return err
		}
		if _, err := managers.Patch(ctx, t.name, types.MergePatchType, claim, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("claim %s: %w", t.name, err)
		}
		if err := deleteNamespace(ctx, kube, t); err != nil {
			return err
		}
		if which == claimDeleteDeactivate {
			if _, err := managers.Patch(ctx, t.name, types.MergePatchType, []byte(`{"spec":{"deactivated":true}}`), metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("deactivate %s: %w", t.name, err)
			}
		}
		return nil
	})
}

// deleteFloor is the delete floor: with nsman's concurrency, per target,
// one DELETE of its namespace preconditioned on the UID and the
// resourceVersion listed, with background propagation, and nothing else.
func deleteFloor(ctx context.Context, cfg *rest.Config, targets []writeTarget) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	background := metav1.DeletePropagationBackground
	return parallel(ctx, len(targets), func(ctx context.Context, i int) error {
		t := targets[i]
		if err := kube.CoreV1().Namespaces().Delete(ctx, t.name, metav1.DeleteOptions{
			Preconditions:     &metav1.Preconditions{UID: &t.uid, ResourceVersion: &t.resourceVersion},
			PropagationPolicy: &background,
		}); err != nil {
			return fmt.Errorf("delete namespace %s: %w", t.name, err)
		}
		return nil
	})
}

// deleteNamespace deletes t's namespace with a UID precondition and
// background propagation, as the claiming write floors do.
func deleteNamespace(ctx context.Context, kube kubernetes.Interface, t writeTarget) error {
	background := metav1.DeletePropagationBackground
	if err := kube.CoreV1().Namespaces().Delete(ctx, t.name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &t.uid}, PropagationPolicy: &background,
	}); err != nil {
		return fmt.Errorf("delete namespace %s: %w", t.name, err)
	}
	return nil
}

// parallel runs do(0…n-1) on floorConcurrency workers; the first error
// stops it.
func parallel(ctx context.Context, n int, do func(context.Context, int) error) error {
	return inParallel(ctx, floorConcurrency, n, do)
}

// inParallel runs do(0…n-1) on workers workers; the first error stops it.
func inParallel(ctx context.Context, workers, n int, do func(context.Context, int) error) error {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				if err := do(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if first != nil {
		return first
	}
	return parent.Err()
}

// sweepRun is one run of the nsman binary.
type sweepRun struct {
	Wall    time.Duration
	MaxRSS  int64
	Code    int
	Summary report.Summary
	Stderr  string
}

// runSweep runs `nsman sweep -o json --kubeconfig kubeconfig args...` as a
// child process and reads its wall time, peak RSS and report summary.
// command is nsman's binary, possibly after env and variables to set: env
// execs nsman in its own process, so the figures are still nsman's.
func runSweep(ctx context.Context, command []string, kubeconfig string, args ...string) (sweepRun, error) {
	all := append(slices.Concat(command, []string{"sweep", "-o", "json", "--kubeconfig", kubeconfig}), args...)
	var stdout, stderr bytes.Buffer
	res, err := nsmantest.Launch(ctx, &stdout, &stderr, all...)
	run := sweepRun{Wall: res.Wall, MaxRSS: res.MaxRSS, Code: res.Code, Stderr: stderr.String()}
	if err != nil {
		return run, fmt.Errorf("nsman %s: %w; stderr:\n%s", strings.Join(all[1:], " "), err, tail(run.Stderr, 2000))
	}
	var out struct {
		Summary report.Summary `json:"summary"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return run, fmt.Errorf("nsman %s: exit %d, report not JSON (%v); stderr:\n%s", strings.Join(all[1:], " "), run.Code, err, tail(run.Stderr, 2000))
	}
	run.Summary = out.Summary
	return run, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// describe renders counts as "k v, k v" in key order.
func describe[V any](m map[string]V) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %v", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// session is one fresh API-tier control plane prepared for nsman (CRD,
// RBAC, a Node for the seeded pods) and the measurements taken in it.
type session struct {
	t       *testing.T
	ctx     context.Context
	n       int
	bin     string
	c       *cluster.Cluster
	env     *nsmantest.Env
	version string
	// sa acts as nsman's ServiceAccount, never throttled on the client
	// side: the floors' client.
	sa    *rest.Config
	seed  seeder
	audit *auditCursor
	rows  []measurement
	// began is when the control plane was started.
	began time.Time
}

// startSession starts a control plane for a measurement of size n with
// nsman's binary bin; the caller stops it (s.c.Stop).
func startSession(ctx context.Context, t *testing.T, bin string, n int) *session {
	t.Helper()
	began := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{Tier: cluster.APITier})
	if err != nil {
		t.Fatal(err)
	}
	ready := false
	defer func() {
		if !ready {
			c.Stop()
		}
	}()
	s := &session{t: t, ctx: ctx, n: n, bin: bin, c: c, began: began}
	if s.env, err = nsmantest.Setup(ctx, c, nsmantest.CRD(t)); err != nil {
		t.Fatal(err)
	}
	version, err := c.Admin.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	s.version = version.GitVersion
	if _, err := c.Admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if s.sa, err = clientcmd.BuildConfigFromFlags("", s.env.Kubeconfig); err != nil {
		t.Fatal(err)
	}
	s.sa.QPS = -1 // the floor is never throttled on the client side
	s.seed = seeder{kube: c.Admin, dyn: s.env.Dynamic}
	s.audit = &auditCursor{c: c, user: s.env.User}
	ready = true
	return s
}

// step logs a step of the measurement.
func (s *session) step(format string, args ...any) {
	s.t.Logf("N=%d: %s", s.n, fmt.Sprintf(format, args...))
}

// measured completes m with the requests audited since the last
// measurement and the load now.
func (s *session) measured(m measurement) measurement {
	m.N = s.n
	m.Load = loadAverage()
	var err error
	if m.Audited, err = s.audit.next(s.ctx); err != nil {
		s.t.Fatal(err)
	}
	s.step("%s: %s, %d requests (%s), RSS %d KiB", m.What, m.Wall.Round(time.Millisecond), m.total(), describe(m.Audited), m.MaxRSS)
	return m
}

// record measures m and adds it to the rows.
func (s *session) record(m measurement) measurement {
	m = s.measured(m)
	s.rows = append(s.rows, m)
	return m
}

// measureCommand runs a sweep through command: nsman's binary, or env
// setting a variable first.
func (s *session) measureCommand(command []string, what string, args ...string) measurement {
	run, err := runSweep(s.ctx, command, s.env.Kubeconfig, args...)
	if err != nil {
		s.t.Fatal(err)
	}
	if run.Code != 0 {
		s.t.Errorf("N=%d %s: nsman exited %d; stderr:\n%s", s.n, what, run.Code, tail(run.Stderr, 4000))
	}
	return s.measured(measurement{What: what, Wall: run.Wall, HTTP: run.Summary.Requests, MaxRSS: run.MaxRSS, States: run.Summary.States,
		TrafficQueries: run.Summary.TrafficQueries})
}

// measureSweep runs nsman's sweep with args.
func (s *session) measureSweep(what string, args ...string) measurement {
	return s.measureCommand([]string{s.bin}, what, args...)
}

// sweepRow runs nsman's sweep with args and adds it to the rows.
func (s *session) sweepRow(what string, args ...string) measurement {
	m := s.measureSweep(what, args...)
	s.rows = append(s.rows, m)
	return m
}

// readRounds is how many times the read floors and the no-op sweep are
// measured, interleaved: the rows are the median runs. On this shared
// machine one run of each differed from the next by up to 2×.
const readRounds = 3

// readRows measures, readRounds times over, the read floor, the read floor
// followed by plus, and the no-op sweep with args, and adds the medians to
// the rows.
func (s *session) readRows(plusWhat string, plus func() (note string, err error), args ...string) {
	var floors, pluses, noops []measurement
	for range readRounds {
		floors = append(floors, s.readFloor())
		pluses = append(pluses, s.readFloorPlus(plusWhat, plus))
		noops = append(noops, s.noop(noopLabel, args...))
	}
	s.rows = append(s.rows, median(floors), median(pluses), median(noops))
}

// readFloor measures the read floor.
func (s *session) readFloor() measurement {
	start := time.Now()
	managers, namespaces, err := floorLists(s.ctx, s.sa)
	if err != nil {
		s.t.Fatal(err)
	}
	return s.measured(measurement{What: readFloorLabel, Wall: time.Since(start),
		Note: fmt.Sprintf("%d managers, %d namespaces", managers, namespaces)})
}

// readFloorPlus measures the read floor followed by more reads, which say
// what they did.
func (s *session) readFloorPlus(what string, more func() (note string, err error)) measurement {
	start := time.Now()
	if _, _, err := floorLists(s.ctx, s.sa); err != nil {
		s.t.Fatal(err)
	}
	note, err := more()
	if err != nil {
		s.t.Fatal(err)
	}
	return s.measured(measurement{What: what, Wall: time.Since(start), Note: note})
}

// noop runs a sweep that must write nothing and find n waiting (managers
// or pairs).
func (s *session) noop(what string, args ...string) measurement {
	m := s.measureSweep(what, args...)
	if w := m.writes(); w != 0 {
		s.t.Errorf("N=%d %s: %d write requests: %s", s.n, what, w, describe(m.Audited))
	}
	if got := m.States[report.StateWaiting]; got != s.n {
		s.t.Errorf("N=%d %s: %d waiting, want %d (%v)", s.n, what, got, s.n, m.States)
	}
	return m
}
