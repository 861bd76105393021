package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/prom"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/policy/traffic"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// The traffic benchmark (issue 47, its first row): one rule with IDLE
// reading traffic from ingress-nginx's counter over trafficSize namespaces,
// in a control plane of its own, a real Prometheus scraping an exporter
// that counts a request to every namespace every second. Every namespace
// is idle by its activity, so each sweep reads its activity, then asks the
// one query, finds requests, and keeps it waiting: nothing is written.
const (
	// trafficSize is the one size the part runs at: the issue's "1,000
	// namespaces"; the exporter's series and the query's answer grow with
	// it, and so does the wait for Prometheus to see them.
	trafficSize = 1000
	// trafficIdleFor is the rule's idleSeconds and the query's window:
	// the namespaces are left until they are that old, idle by their
	// activity, from when each sweep asks the query; a few scrapes of
	// nsmantest.ScrapeInterval, so that every namespace has requests in
	// it.
	trafficIdleFor = 20 * time.Second
	// trafficLabel=on is what the rule selects namespaces by.
	trafficLabel = "nsman.bench/traffic"
	// trafficRulesNamespace holds the rule; nsman runs with it trusted.
	trafficRulesNamespace = "bench-traffic"
	trafficRuleName       = "idle"
	trafficPolicyName     = "unused"
	// trafficPrefix names the namespaces the rule matches, also their set.
	trafficPrefix = "tr"
	// trafficPreset is the rule's traffic preset.
	trafficPreset = "ingress-nginx"
	// trafficControllerNamespace is the target label `namespace` of the
	// scrape job, as a ServiceMonitor gives the controller's pod: the
	// preset counts only series scraped from there.
	trafficControllerNamespace = "ingress-nginx"
	// trafficFirstLabel labels nsman's first sweep over the namespaces.
	trafficFirstLabel = firstSweepLabel + " (reads activity and traffic)"
	// trafficFloorLabel labels the read floor with the activity lists
	// and the query, in the driver's process.
	trafficFloorLabel = floorPlusPrefix + "paged LIST of pods, ReplicaSets, ControllerRevisions, Jobs + one Prometheus query"
	// trafficProcessLabel labels the same reads made by a process of its
	// own, the minimal client of testdata/trafficfloor.
	trafficProcessLabel = "floor as a process: a minimal client-go program (test/bench/testdata/trafficfloor) making the reads of the row above"
	// trafficNoopBound: the no-op sweep against the minimal client's reads,
	// a process (issue 47).
	trafficNoopBound = 1.3
	// trafficNoneRuleName is the rule that selects no namespace, beside
	// the part's rule, with the same policy; trafficRuleLabel=none labels
	// it, for the diagnostic sweep to take it alone (-l).
	trafficNoneRuleName = "none"
	trafficRuleLabel    = "nsman.bench/traffic-rule"
	// trafficNoMatchLabel labels the diagnostic sweep of that rule alone:
	// what a sweep costs a separate process that reads the managers and
	// the namespaces, matches none and writes a report of no entry.
	trafficNoMatchLabel = "diagnostic: nsman sweep, no namespace matched (a rule selecting none, `-l`)"
)

// trafficQuery is the PromQL a sweep asks for the rule: its preset's,
// unpinned (no --traffic-match), over trafficIdleFor.
func trafficQuery() string {
	p, ok := traffic.Lookup(trafficPreset)
	if !ok {
		panic("policy/traffic has no preset " + trafficPreset)
	}
	return p.PromQL("", trafficIdleFor)
}

// measureTraffic starts a control plane, seeds trafficSize namespaces and
// the rule over them, serves the exporter and starts Prometheus, counts a
// request to every namespace every second, waits until the namespaces are
// trafficIdleFor old and Prometheus answers the query for each with
// requests, and measures, in order: nsman's first sweep, then, readRounds
// times over, interleaved, the read floor, the read floor with the
// activity lists and the query, the same reads by a process of its own
// (testdata/trafficfloor), the no-op sweep and the sweep of a rule that
// matches none. It fails the run unless every sweep found every namespace
// waiting, asked the query once, answered, and listed the activity, and
// every floor found requests for every namespace.
func measureTraffic(t *testing.T, bin string) ([]measurement, string) {
	t.Helper()
	n := trafficSize
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	floorBin := filepath.Join(t.TempDir(), "trafficfloor")
	if err := buildTrafficFloor(nsmantest.RepoRoot(), floorBin); err != nil {
		t.Fatal(err)
	}
	s := startSession(ctx, t, bin, n)
	defer s.c.Stop()

	began := time.Now()
	names, err := s.seed.trafficRule(ctx, n)
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	seeded := time.Now()
	s.step("seeded %d namespaces and the rule in %s", n, seeded.Sub(began).Round(time.Millisecond))

	url, stop := startTraffic(ctx, t, names)
	defer stop()
	client, err := prom.New(prom.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	// Until a namespace is trafficIdleFor old it is not idle by its
	// activity, and a sweep asks nothing of its traffic; the API server
	// stamped each before seeding ended.
	if err := waitTraffic(ctx, client, n, seeded.Add(trafficIdleFor+time.Second)); err != nil {
		t.Fatal(err)
	}
	s.step("the namespaces are %s old and Prometheus answers requests for each, after %s", trafficIdleFor, time.Since(seeded).Round(time.Millisecond))

	args := []string{"--trusted-namespaces", trafficRulesNamespace, "--prometheus-url", url}
	if _, err := s.audit.next(ctx); err != nil {
		t.Fatal(err)
	}
	first := s.sweepRow(trafficFirstLabel, args...)
	s.trafficCheck(first)
	if got := first.States[report.StateWaiting]; got != n {
		t.Errorf("traffic over %d: first sweep: %d waiting, want %d (%v)", n, got, n, first.States)
	}
	noneArgs := s.trafficNoneRule(ctx, args)
	var floors, pluses, processes, noops, nones []measurement
	for range readRounds {
		floors = append(floors, s.readFloor())
		pluses = append(pluses, s.readFloorPlus(trafficFloorLabel, func() (string, error) {
			return floorTraffic(ctx, s, client)
		}))
		processes = append(processes, s.processFloor(floorBin, url))
		m := s.noop(noopLabel, args...)
		s.trafficCheck(m)
		noops = append(noops, m)
		nones = append(nones, s.noMatch(noneArgs...))
	}
	s.rows = append(s.rows, median(floors), median(pluses), median(processes), median(noops), median(nones))
	s.step("the traffic part took %s, its control plane's start included", time.Since(s.began).Round(time.Second))
	return s.rows, s.version
}

// trafficNoneRule creates the rule that selects no namespace, with the
// part's policy, and runs one sweep of it alone, untimed, which records its
// status; it returns the arguments of the diagnostic sweep that takes it
// alone. The part's no-op sweeps handle it too: no namespace, nothing to
// write.
func (s *session) trafficNoneRule(ctx context.Context, args []string) []string {
	s.t.Helper()
	rule := trafficRuleObject()
	rule.SetName(trafficNoneRuleName)
	rule.SetLabels(map[string]string{trafficRuleLabel: trafficNoneRuleName})
	if err := unstructured.SetNestedStringMap(rule.Object, map[string]string{trafficLabel: trafficNoneRuleName}, "spec", "namespaceSelector", "matchLabels"); err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.env.Dynamic.Resource(cluster.ManagerResource).Namespace(trafficRulesNamespace).Create(ctx, rule, metav1.CreateOptions{}); err != nil {
		s.t.Fatalf("create rule %s: %v", trafficNoneRuleName, err)
	}
	noneArgs := append(slices.Clone(args), "-l", trafficRuleLabel+"="+trafficNoneRuleName)
	if run, err := runSweep(ctx, []string{s.bin}, s.env.Kubeconfig, noneArgs...); err != nil || run.Code != 0 {
		s.t.Fatalf("the first sweep of rule %s: exit %d, %v; stderr:\n%s", trafficNoneRuleName, run.Code, err, tail(run.Stderr, 4000))
	}
	if _, err := s.audit.next(ctx); err != nil { // untimed: in no row
		s.t.Fatal(err)
	}
	return noneArgs
}

// noMatch measures the diagnostic sweep of the rule that selects no
// namespace: it must write nothing, have no entry, and read neither the
// activity nor the traffic.
func (s *session) noMatch(args ...string) measurement {
	m := s.measureSweep(trafficNoMatchLabel, args...)
	m.Note = "no entry"
	if w, entries := m.writes(), total(m.States); w != 0 || entries != 0 || m.count("list", "controllerrevisions") != 0 || m.TrafficQueries != nil {
		s.t.Errorf("traffic over %d: %s: %d writes, %d entries, traffic queries %v (%s); want none of any", s.n, m.What, w, entries, m.TrafficQueries, describe(m.Audited))
	}
	return m
}

// total is the sum of counts.
func total[K comparable](counts map[K]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}

// trafficRule creates n namespaces trafficPrefix-00000… labelled
// setLabel=trafficPrefix and trafficLabel=on, with nothing in them, and the
// rule in trafficRulesNamespace, and returns the namespaces' names.
func (s seeder) trafficRule(ctx context.Context, n int) ([]string, error) {
	labels := map[string]string{setLabel: trafficPrefix, trafficLabel: "on"}
	names := make([]string, n)
	if err := inParallel(ctx, seedConcurrency, n, func(ctx context.Context, i int) error {
		names[i] = seededName(trafficPrefix, i)
		return s.namespace(ctx, names[i], labels)
	}); err != nil {
		return nil, err
	}
	if err := s.namespace(ctx, trafficRulesNamespace, nil); err != nil {
		return nil, err
	}
	if _, err := s.dyn.Resource(cluster.ManagerResource).Namespace(trafficRulesNamespace).Create(ctx, trafficRuleObject(), metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create rule: %w", err)
	}
	return names, nil
}

// trafficRuleObject is the rule: in trafficRulesNamespace, over the
// namespaces labelled trafficLabel=on, IDLE for trafficIdleFor by activity
// and by the traffic of trafficPreset → DELETE. DELETE, not SLEEP: no
// namespace is ever due, and a SLEEP would read each namespace's workloads
// besides, which is not what the row measures.
func trafficRuleObject() *unstructured.Unstructured {
	return newManager(trafficRulesNamespace, trafficRuleName, map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{trafficLabel: "on"}},
		"policies": []any{map[string]any{
			"name": trafficPolicyName,
			"condition": map[string]any{"type": policy.ConditionIdle, "params": map[string]any{
				"idleSeconds": int64(trafficIdleFor / time.Second),
				"traffic":     map[string]any{"preset": trafficPreset},
			}},
			"action": map[string]any{"type": policy.ActionDelete},
		}},
	})
}

// startTraffic serves the exporter on loopback, counting a request to each
// of namespaces through ingress-nginx every second, and starts Prometheus
// scraping it as the controller's pod; it returns Prometheus's URL and
// what stops all three.
func startTraffic(ctx context.Context, t *testing.T, namespaces []string) (url string, stop func()) {
	t.Helper()
	tr, handler := nsmantest.NewTraffic()
	srv := httptest.NewServer(handler)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			for _, ns := range namespaces {
				tr.NginxRequests(ns, "web", "web", 1)
			}
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	p, err := nsmantest.LaunchPrometheus(ctx, t.TempDir(), nsmantest.ScrapeJob{
		Name: trafficPreset, Targets: []string{strings.TrimPrefix(srv.URL, "http://")},
		Labels: map[string]string{"namespace": trafficControllerNamespace},
	})
	// halt stops the counting and the exporter; the function returned
	// stops Prometheus first, which scrapes it.
	halt := func() {
		close(quit)
		<-done
		srv.Close()
	}
	if err != nil {
		halt()
		t.Fatal(err)
	}
	return p.URL, func() { p.Stop(); halt() }
}

// waitTraffic waits until ready, then until the query answers requests
// for each of the n namespaces, for at most a minute more.
func waitTraffic(ctx context.Context, client *prom.Client, n int, ready time.Time) error {
	select {
	case <-time.After(time.Until(ready)):
	case <-ctx.Done():
		return ctx.Err()
	}
	deadline := time.Now().Add(time.Minute)
	for {
		used, series, err := queryTraffic(ctx, client)
		if err == nil && used == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("traffic: after a minute, the query answers requests for %d namespaces of %d (%d series, error %v)", used, n, series, err)
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// queryTraffic asks the rule's query once, through internal/prom's client
// as nsman does, and counts the namespaces with requests among the series.
func queryTraffic(ctx context.Context, client *prom.Client) (used, series int, err error) {
	vec, err := client.Query(ctx, trafficQuery())
	if err != nil {
		return 0, 0, err
	}
	for _, s := range vec {
		if strings.HasPrefix(string(s.Metric["namespace"]), trafficPrefix+"-") && s.Value > 0 {
			used++
		}
	}
	return used, len(vec), nil
}

// floorTraffic lists what IDLE counts as activity (floorActivityLists),
// then asks the query once: what a sweep must read to find every
// namespace used. It fails unless the query answered requests for all.
func floorTraffic(ctx context.Context, s *session, client *prom.Client) (string, error) {
	lists, err := floorActivityLists(ctx, s.sa)
	if err != nil {
		return "", err
	}
	used, series, err := queryTraffic(ctx, client)
	if err != nil {
		return "", err
	}
	if used != s.n {
		return "", fmt.Errorf("traffic floor: the query answered requests for %d namespaces of %d", used, s.n)
	}
	return fmt.Sprintf("%s; one query: %d series, %d namespaces with requests", lists, series, used), nil
}

// buildTrafficFloor builds the process floor, testdata/trafficfloor, from
// the tree at root into bin, as the generator builds nsman.
func buildTrafficFloor(root, bin string) error {
	build := exec.Command("go", "build", "-o", bin, "./test/bench/testdata/trafficfloor")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./test/bench/testdata/trafficfloor: %v\n%s", err, out)
	}
	return nil
}

// processFloor measures the process floor: bin, the minimal client of
// testdata/trafficfloor, started through the launcher as nsman is, as
// nsman's ServiceAccount, making the reads of the read floor and
// floorTraffic and asking the query of Prometheus at url. It fails the run
// unless the program read the managers and every namespace, and the query
// answered requests for every namespace.
func (s *session) processFloor(bin, url string) measurement {
	var stdout, stderr bytes.Buffer
	res, err := nsmantest.Launch(s.ctx, &stdout, &stderr, bin, "--kubeconfig", s.env.Kubeconfig, "--prometheus-url", url,
		"--query", trafficQuery(), "--prefix", trafficPrefix, "--want", strconv.Itoa(s.n), "--page-size", strconv.Itoa(pageSize))
	if err != nil || res.Code != 0 {
		s.t.Fatalf("traffic over %d: the process floor: exit %d, %v; stderr:\n%s", s.n, res.Code, err, tail(stderr.String(), 4000))
	}
	var read struct {
		Managers int            `json:"managers"`
		Listed   map[string]int `json:"listed"`
		Series   int            `json:"series"`
		Used     int            `json:"used"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &read); err != nil || read.Used != s.n || read.Listed["namespaces"] < s.n || read.Managers == 0 {
		s.t.Fatalf("traffic over %d: the process floor read %q (%v): want the managers, every namespace, and requests for each", s.n, stdout.String(), err)
	}
	return s.measured(measurement{What: trafficProcessLabel, Wall: res.Wall, MaxRSS: res.MaxRSS,
		Note: fmt.Sprintf("%d managers, %d namespaces, %d replicasets, %d controllerrevisions, %d jobs, %d pods; one query: %d series, %d namespaces with requests",
			read.Managers, read.Listed["namespaces"], read.Listed["replicasets"], read.Listed["controllerrevisions"], read.Listed["jobs"], read.Listed["pods"], read.Series, read.Used)})
}

// trafficCheck checks sweep m: its activity listed, and one traffic query
// asked and answered.
func (s *session) trafficCheck(m measurement) {
	if m.count("list", "controllerrevisions") == 0 {
		s.t.Errorf("traffic over %d: %s listed no ControllerRevisions: it did not read the namespaces' activity (%s)", s.n, m.What, describe(m.Audited))
	}
	if !oneQueryAnswered(m) {
		s.t.Errorf("traffic over %d: %s: traffic queries %v, want one answered", s.n, m.What, m.TrafficQueries)
	}
}

// oneQueryAnswered says whether sweep m asked one traffic query, and had
// an answer (the report's summary.trafficQueries).
func oneQueryAnswered(m measurement) bool {
	return m.TrafficQueries["answered"] == 1 && m.TrafficQueries["unanswered"] == 0
}

// trafficRows are the traffic part's rows, found by label; none is the
// diagnostic sweep that matched no namespace, when there is one.
type trafficRows struct {
	first, floor, plus, process, noop, none measurement
	hasNone                                 bool
}

// trafficRowsOf are the traffic part's rows of size n.
func trafficRowsOf(rows rowSet, n int) trafficRows {
	r := trafficRows{first: rows.must(n, trafficFirstLabel), floor: rows.must(n, readFloorLabel),
		plus: rows.must(n, trafficFloorLabel), process: rows.must(n, trafficProcessLabel), noop: rows.must(n, noopLabel)}
	r.none, r.hasNone = rows.get(n, trafficNoMatchLabel)
	return r
}

// trafficSweeps are the rows of nsman's sweeps among the traffic part's:
// all but the process floor's, whose peak RSS is the minimal client's.
func trafficSweeps(rows rowSet) rowSet {
	return slices.DeleteFunc(slices.Clone(rows), func(m measurement) bool { return m.What == trafficProcessLabel })
}

// trafficQueries says what sweep m's report counted of its traffic
// queries.
func trafficQueries(m measurement) string {
	return cmpOr(describe(m.TrafficQueries), "none")
}

// trafficTargets computes the traffic part's targets, at each size
// measured; the no-op one is set at trafficSize, the issue's.
func trafficTargets(rows rowSet) []target {
	var ts []target
	for _, n := range sizesOf(rows) {
		r := trafficRowsOf(rows, n)
		x := ratio(r.noop.Wall, r.process.Wall)
		peak, at := peakRSS(trafficSweeps(rows), n)
		ts = append(ts,
			setAt(trafficSize, target{N: n, Source: "47", Met: x <= trafficNoopBound,
				What: fmt.Sprintf("traffic: no-op sweep ≤ %.1f × the minimal client's reads (a process)", trafficNoopBound),
				Measured: fmt.Sprintf("%s / %s = %.2f× (diagnostic, not a target: the same reads in the driver's process, %s, %.2f×)",
					r.noop.at(), r.process.at(), x, r.plus.at(), ratio(r.noop.Wall, r.plus.Wall))}),
			target{N: n, What: "traffic: zero writes in a no-op sweep", Source: "47",
				Measured: fmt.Sprintf("%d (%s)", r.noop.writes(), r.noop.ref()), Met: r.noop.writes() == 0},
			target{N: n, What: "traffic: one traffic query per sweep, answered", Source: "47",
				Met:      oneQueryAnswered(r.first) && oneQueryAnswered(r.noop),
				Measured: fmt.Sprintf("first %s (%s), no-op %s (%s)", trafficQueries(r.first), r.first.ref(), trafficQueries(r.noop), r.noop.ref())},
			target{N: n, What: fmt.Sprintf("traffic: peak RSS ≤ %d MiB, over every nsman sweep", rssBoundMiB), Source: "47, OE",
				Measured: fmt.Sprintf("%s (%s)", mib(peak), at.ref()), Met: float64(peak)/1024 <= rssBoundMiB},
		)
	}
	return ts
}

// trafficMethod describes the traffic part, over n namespaces.
func trafficMethod(b *strings.Builder, n int) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	w := int64(trafficIdleFor / time.Second)
	p("A fresh control plane of its own, at N = %d only (the issue's size). Seeded: N empty namespaces labelled `%s=on`\n", n, trafficLabel)
	p("and one rule, `%s/%s`, in its own namespace (nsman runs with `--trusted-namespaces %s --prometheus-url` the\n", trafficRulesNamespace, trafficRuleName, trafficRulesNamespace)
	p("Prometheus below), over them, with one policy: `%s` (idleSeconds %d, `traffic: {preset: %s}`) → DELETE.\n", policy.ConditionIdle, w, trafficPreset)
	p("An exporter of ingress-nginx's request counter (nsmantest.NewTraffic, served on loopback) counts a request to every\n")
	p("namespace every second; a real Prometheus (nsmantest.LaunchPrometheus, the version test/tools/promtool pins) scrapes it\n")
	p("every %s in a job whose target label `namespace=%s` stands for the controller's pod, as a ServiceMonitor gives it.\n", nsmantest.ScrapeInterval, trafficControllerNamespace)
	p("The generator waits until the namespaces are %d s old, idle by their activity, and Prometheus answers requests for each:\n", w)
	p("from then on every sweep lists what IDLE counts as activity, asks the preset's query once, finds requests in every\n")
	p("namespace and keeps it waiting, writing nothing; DELETE rather than SLEEP, as nothing is ever due and a SLEEP would\n")
	p("read each namespace's workloads besides. nsman's first sweep is measured; then, %d times, interleaved: the read floor,\n", readRounds)
	p("the read floor with the activity lists and the query, the same reads made by a process of its own, a no-op sweep and\n")
	p("the diagnostic sweep below. The read floor lists the managers and the namespaces as in \"Managers\"; the next row adds,\n")
	p("as in the IDLE part, one paged list (page size %d), cluster-wide and metadata only, of pods, ReplicaSets,\n", pageSize)
	p("ControllerRevisions and Jobs, then the preset's PromQL over %d s, asked once through internal/prom's client, as nsman\n", w)
	p("asks it. Those two floors run in the driver's process, its clients built and its connections warm: they cost the reads\n")
	p("alone. The process floor is a minimal client-go program (test/bench/testdata/trafficfloor), built by the generator as it\n")
	p("builds nsman and started through the same launcher: it starts, builds its clients from nsman's kubeconfig (the\n")
	p("ServiceAccount, unthrottled), makes the same lists in the same order, asks the same query through internal/prom's\n")
	p("client, checks that the query answered requests for every namespace, prints what it read and exits. nsman is a process\n")
	p("too, which starts, connects, asks the API server what it serves and writes a report of N entries: every process pays\n")
	p("its start (the Go runtime, package initialisation), its connections and their first requests, which no CLI avoids and\n")
	p("the in-process floors never pay. The target is therefore set against the process floor, the least any process makes\n")
	p("of these reads; the ratio to the same reads in the driver's process is reported beside it, a diagnostic, not a\n")
	p("target. The rows are the median runs; the notes list every run. The generator fails the run unless every sweep found\n")
	p("every namespace waiting, listed the ControllerRevisions (audit log) and counted one traffic query, answered (its\n")
	p("report's `summary.trafficQueries`), the no-op sweeps wrote nothing, and every floor found requests for every namespace.\n")
	p("So that what a process of nsman costs before it evaluates anything shows too, after the first sweep a rule\n")
	p("`%s/%s` is created beside the other, labelled `%s=%s`, with the same policy over the namespaces\n", trafficRulesNamespace, trafficNoneRuleName, trafficRuleLabel, trafficNoneRuleName)
	p("labelled `%s=%s`, which none is, and swept once, untimed (it records its status); each round then adds a\n", trafficLabel, trafficNoneRuleName)
	p("diagnostic sweep of it alone (`-l %s=%s`, which lists the managers once more for those that govern\n", trafficRuleLabel, trafficNoneRuleName)
	p("namespaces), which must write nothing, report no entry and read neither the activity nor the traffic. The no-op sweeps\n")
	p("handle both rules.\n\n")
}

// trafficAnalysis writes what the traffic part says, at each size
// measured.
func trafficAnalysis(b *strings.Builder, rows rowSet) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	for _, n := range sizesOf(rows) {
		r := trafficRowsOf(rows, n)
		p("**A rule with IDLE from traffic over %d namespaces.** The first sweep took %s and wrote %d requests (%s); its traffic\n",
			n, r.first.at(), r.first.writes(), cmpOr(describe(writesOnly(r.first)), "none"))
		p("queries: %s. The no-op sweep took %s: %.2f× the minimal client's reads, a process (%s), the target's ratio.\n",
			trafficQueries(r.first), r.noop.at(), ratio(r.noop.Wall, r.process.Wall), r.process.at())
		p("Diagnostics, not targets: %.2f× the same reads in the driver's process (%s), and %.2f× the read floor (%s), which\n",
			ratio(r.noop.Wall, r.plus.Wall), r.plus.at(), ratio(r.noop.Wall, r.floor.Wall), r.floor.ref())
		p("reads neither; the process floor less the in-process one, %s, is what starting a process and connecting cost the\n", signed(r.process.Wall-r.plus.Wall))
		p("minimal client. The no-op sweep made %d requests, %d of them lists of controllerrevisions, where the floor with the\n",
			r.noop.total(), r.noop.count("list", "controllerrevisions"))
		p("activity lists made %d (more: %s) and the process floor %d, and its traffic queries were %s.\n",
			r.plus.total(), cmpOr(describe(moreRequests(r.noop, r.plus)), "none"), r.process.total(), trafficQueries(r.noop))
		if r.hasNone {
			noneAnalysis(b, r)
		}
		p("\n")
	}
}

// noneAnalysis compares, in r, what reading the activity and the traffic
// costs nsman beyond the sweep that matched no namespace with what the
// activity lists and the query cost the floor beyond the read floor.
func noneAnalysis(b *strings.Builder, r trafficRows) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	nsman, floor := r.noop.Wall-r.none.Wall, r.plus.Wall-r.floor.Wall
	p("The sweep of the rule that matched no namespace took %s: %.2f× the read floor, with %d requests (more than the\n",
		r.none.at(), ratio(r.none.Wall, r.floor.Wall), r.none.total())
	p("floor: %s), what a process of its own costs before it evaluates anything. The no-op sweep less it, %s, is what\n",
		cmpOr(describe(moreRequests(r.none, r.floor)), "none"), signed(nsman))
	p("reading the activity and the traffic, evaluating %d namespaces and reporting them cost nsman; the floor with the\n", r.noop.States[report.StateWaiting])
	times := ""
	if floor > 0 {
		times = fmt.Sprintf(": %.2f× it", ratio(nsman, floor))
	}
	p("activity lists and the query less the read floor, %s, is what the lists and the query cost the floor%s.\n", signed(floor), times)
}

// signed is d in seconds, negative when it is (medians of different runs
// may be in either order).
func signed(d time.Duration) string {
	if d < 0 {
		return "-" + sec(-d)
	}
	return sec(d)
}

// The part's rule is one nsman accepts, strictly, as a rule whose one
// policy is IDLE for trafficIdleFor from the preset's traffic, and the
// floor asks the query a sweep asks for it: a wrong rule would otherwise
// show only in a control-plane run.
func TestTrafficRule(t *testing.T) {
	m, errs := policy.ParseStrict(trafficRuleObject())
	if len(errs) > 0 {
		t.Fatalf("the traffic part's rule: %v", errs.ToAggregate())
	}
	if m.Rule == nil || len(m.Policies) != 1 {
		t.Fatalf("the traffic part's rule: a rule %v, %d policies; want a rule of one policy", m.Rule != nil, len(m.Policies))
	}
	c := m.Policies[0].Condition
	if c.Type != policy.ConditionIdle || c.Idle != trafficIdleFor || c.Traffic == nil || *c.Traffic != (traffic.Source{Preset: trafficPreset}) {
		t.Errorf("the traffic part's condition: %s, idle %s, traffic %+v; want IDLE, %s, preset %s", c.Type, c.Idle, c.Traffic, trafficIdleFor, trafficPreset)
	}
	p, _ := traffic.Lookup(trafficPreset)
	if got, want := trafficQuery(), p.PromQL("", c.Idle); got != want || !strings.Contains(got, `namespace="`+trafficControllerNamespace+`"`) {
		t.Errorf("the floor's query %s, want a sweep's, %s, pinned to the scrape job's namespace %s", got, want, trafficControllerNamespace)
	}
}
