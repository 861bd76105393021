package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/webhook"
)

// The benchmark of warnings before an action (issue 48): warnSize
// managers, each in its own namespace, with one policy TTL → DELETE and
// warnBefore [warnThreshold], in a control plane of their own.
const (
	// warnSize is the one size the part runs at: the issue's "1,000
	// managers due within the threshold".
	warnSize = 1000
	// warnThreshold is the policies' one warnBefore.
	warnThreshold = "24h"
	// warnSoonTTL puts the due time of a manager that is warned this far
	// after its namespace's creation, within warnThreshold;
	// warnLaterTTL of one that is not, well beyond it.
	warnSoonTTL  = 2 * time.Hour
	warnLaterTTL = 72 * time.Hour
	// warnRounds is how many times the no-op sweep, the warning sweep, the
	// sweep after it and the deliveries floor are measured, interleaved.
	warnRounds = 3
	// warnBound: the warning sweep against the no-op sweep plus the
	// deliveries floor (issue 48).
	warnBound = 1.5
)

// Seeded sets of the part: the managers not within the threshold, swept
// by the no-op sweeps; and, per round (the round's number appended), those
// the warning sweep warns and those the deliveries floor writes to.
const (
	setWarnLater = "warn-later"
	setWarnSoon  = "warn-soon"
	setWarnFloor = "warn-floor"
)

func warnSweepLabel(n int) string {
	return fmt.Sprintf("nsman sweep, warns %d managers due within warnBefore %s (--notify-url-file, json)", n, warnThreshold)
}

const warnAgainLabel = "nsman sweep, the same managers again (warned already)"

func warnFloorLabel(n int) string {
	return fmt.Sprintf("deliveries floor: %d × (status.warned patch, Event, POST), %d workers", n, floorConcurrency)
}

// warnReceiver is the notification receiver of the part: it counts the
// POSTs of event dueSoon by target since the last take.
type warnReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	// dueSoon counts the notifications of event dueSoon by target; other
	// the requests that were not one.
	dueSoon map[string]int
	other   int
}

func newWarnReceiver(t *testing.T) *warnReceiver {
	r := &warnReceiver{dueSoon: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var n tell.Notification
		body, err := io.ReadAll(req.Body)
		ok := err == nil && req.Method == http.MethodPost && json.Unmarshal(body, &n) == nil && n.Event == tell.EventDueSoon && n.Target != ""
		r.mu.Lock()
		if ok {
			r.dueSoon[n.Target]++
		} else {
			r.other++
		}
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// take returns what arrived since the last take: the dueSoon
// notifications, the targets told, those told more than once, the other
// requests.
func (r *warnReceiver) take() (notes, targets, twice, other int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.dueSoon {
		notes += c
		if c > 1 {
			twice++
		}
	}
	targets, other = len(r.dueSoon), r.other
	r.dueSoon, r.other = map[string]int{}, 0
	return notes, targets, twice, other
}

// delivered notes what the receiver got during m, and checks it is want
// dueSoon notifications, one per target.
func (s *session) delivered(r *warnReceiver, m measurement, want int) measurement {
	notes, targets, twice, other := r.take()
	m.Note = fmt.Sprintf("%d dueSoon notifications received, for %d managers", notes, targets)
	if notes != want || targets != want || twice != 0 || other != 0 {
		s.t.Errorf("warn over %d: %s: the receiver got %d dueSoon notifications for %d managers (%d told more than once) and %d other requests, want %d, one each",
			s.n, m.What, notes, targets, twice, other, want)
	}
	return m
}

// measureWarn starts a control plane, seeds warnSize managers not within
// their warnBefore and measures nsman's first sweep over them; then, for
// each of warnRounds rounds, with warnSize managers due within it seeded
// for the warning sweep and as many for the deliveries floor: the no-op
// sweep, the warning sweep, the same sweep again (which must warn of
// none and write nothing) and the deliveries floor. Every sweep runs with
// --notify-url-file naming the part's receiver.
func measureWarn(t *testing.T, bin string) ([]measurement, string) {
	t.Helper()
	n := warnSize
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Minute)
	defer cancel()
	s := startSession(ctx, t, bin, n)
	defer s.c.Stop()
	recv := newWarnReceiver(t)
	urlFile := filepath.Join(t.TempDir(), "notify-url")
	if err := os.WriteFile(urlFile, []byte(recv.srv.URL+"/nsman\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	notify := []string{"--notify-url-file", urlFile, "--notify-format", "json"}
	sweep := func(what, set string) measurement {
		return s.measureSweep(what, append([]string{"-l", setLabel + "=" + set}, notify...)...)
	}
	seeded := func(set string, k kind) string {
		began := time.Now()
		if err := s.seed.seed(ctx, set, set, n, func(int) kind { return k }); err != nil {
			t.Fatalf("seed %s: %v", set, err)
		}
		s.step("seeded %d managers (%s) in %s", n, set, time.Since(began).Round(time.Millisecond))
		return set
	}
	waiting := func(m measurement) {
		if got := m.States[report.StateWaiting]; got != n {
			t.Errorf("warn over %d: %s: %d waiting, want %d (%v)", n, m.What, got, n, m.States)
		}
	}

	seeded(setWarnLater, warnLater)
	if _, err := s.audit.next(ctx); err != nil {
		t.Fatal(err)
	}
	first := s.delivered(recv, sweep(firstSweepLabel+" (records status)", setWarnLater), 0)
	waiting(first)
	s.rows = append(s.rows, first)

	var noops, warns, agains, floors []measurement
	for r := range warnRounds {
		soon, floorSet := seeded(fmt.Sprintf("%s%d", setWarnSoon, r), warnSoon), seeded(fmt.Sprintf("%s%d", setWarnFloor, r), warnSoon)
		if _, err := s.audit.next(ctx); err != nil {
			t.Fatal(err)
		}
		m := s.delivered(recv, sweep(noopLabel, setWarnLater), 0)
		if w := m.writes(); w != 0 {
			t.Errorf("warn over %d: %s: %d write requests: %s", n, m.What, w, describe(m.Audited))
		}
		waiting(m)
		noops = append(noops, m)

		m = s.delivered(recv, sweep(warnSweepLabel(n), soon), n)
		waiting(m)
		if got := m.count("create", "events"); got != n {
			t.Errorf("warn over %d: %s: %d Events created, want %d, a DueSoon each (%s)", n, m.What, got, n, describe(m.Audited))
		}
		if got := m.count("patch", "namespacemanagers/status"); got < n {
			t.Errorf("warn over %d: %s: %d status patches, want one per manager at least (%s)", n, m.What, got, describe(m.Audited))
		}
		if err := s.seed.warnedAll(ctx, soon, n); err != nil {
			t.Errorf("warn over %d: after %s: %v", n, m.What, err)
		}
		warns = append(warns, m)

		m = s.delivered(recv, sweep(warnAgainLabel, soon), 0)
		if w := m.writes(); w != 0 {
			t.Errorf("warn over %d: %s: %d write requests: %s", n, m.What, w, describe(m.Audited))
		}
		waiting(m)
		agains = append(agains, m)

		floors = append(floors, s.delivered(recv, s.deliveriesFloor(floorSet, recv.srv.URL+"/nsman"), n))
	}
	s.rows = append(s.rows, median(noops), median(warns), median(agains), median(floors))
	s.step("no-op sweeps %s, warning sweeps %s, again %s, deliveries floors %s", walls(noops), walls(warns), walls(agains), walls(floors))
	return s.rows, s.version
}

// warnedAll checks, as the admin, that each of the n managers of set
// records the warning of its policy and has one DueSoon Event.
func (s seeder) warnedAll(ctx context.Context, set string, n int) error {
	list, err := s.dyn.Resource(nsmancluster.ManagerResource).List(ctx, metav1.ListOptions{LabelSelector: setLabel + "=" + set})
	if err != nil {
		return err
	}
	var wrong []string
	for _, m := range list.Items {
		var st struct {
			Warned *status.Warned `json:"warned"`
		}
		raw, _ := json.Marshal(m.Object["status"])
		if err := json.Unmarshal(raw, &st); err != nil || st.Warned == nil || st.Warned.Policy != "cleanup" || len(st.Warned.Before) == 0 {
			wrong = append(wrong, fmt.Sprintf("%s: %s", m.GetName(), raw))
		}
	}
	if len(list.Items) != n || len(wrong) > 0 {
		return fmt.Errorf("%d managers in set %s, %d of them without status.warned, e.g. %s", len(list.Items), set, len(wrong), strings.Join(wrong[:min(len(wrong), 2)], "; "))
	}
	events, err := s.kube.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + tell.DueSoon})
	if err != nil {
		return err
	}
	perNamespace := map[string]int{}
	for _, ev := range events.Items {
		if strings.HasPrefix(ev.Namespace, set+"-") {
			perNamespace[ev.Namespace]++
		}
	}
	for ns, c := range perNamespace {
		if c != 1 {
			return fmt.Errorf("%d %s Events in %s, want 1", c, tell.DueSoon, ns)
		}
	}
	if len(perNamespace) != n {
		return fmt.Errorf("%s Events in %d namespaces of set %s, want %d", tell.DueSoon, len(perNamespace), set, n)
	}
	return nil
}

// deliveriesFloor measures the deliveries floor over set: per manager, with
// nsman's concurrency, the requests a warning sweep must send, as the
// ServiceAccount, unthrottled, its targets listed untimed.
func (s *session) deliveriesFloor(set, url string) measurement {
	targets, err := prepareWriteFloor(s.ctx, s.sa, set)
	if err != nil {
		s.t.Fatal(err)
	}
	if len(targets) != s.n {
		s.t.Fatalf("deliveries floor: %d targets listed in %s, want %d", len(targets), set, s.n)
	}
	if _, err := s.audit.next(s.ctx); err != nil { // the lists are not the floor's
		s.t.Fatal(err)
	}
	start := time.Now()
	if err := warnFloor(s.ctx, s.sa, targets, url); err != nil {
		s.t.Fatal(err)
	}
	return s.measured(measurement{What: warnFloorLabel(s.n), Wall: time.Since(start)})
}

// warnFloor sends, per target and with nsman's concurrency: a merge patch
// of the manager's status subresource, conditional on the listed
// resourceVersion, that sets status.warned; the DueSoon Event
// (events.k8s.io/v1) regarding the manager; and the POST of the dueSoon
// notification, in the json format, to url.
func warnFloor(ctx context.Context, cfg *rest.Config, targets []writeTarget, url string) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: floorConcurrency}}
	defer client.CloseIdleConnections()
	now := time.Now().UTC()
	due := now.Add(warnSoonTTL).Truncate(time.Second)
	w := report.Warning{Policy: "cleanup", Action: policy.ActionDelete, Due: due, Before: warnThreshold}
	return parallel(ctx, len(targets), func(ctx context.Context, i int) error {
		t := targets[i]
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": t.resourceVersion},
			"status": map[string]any{"warned": status.Warned{Policy: w.Policy, Due: due, Before: []string{"24h0m0s"}}}})
		if err != nil {
			return err
		}
		m, err := dyn.Resource(nsmancluster.ManagerResource).Namespace(t.name).Patch(ctx, t.name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		if err != nil {
			return fmt.Errorf("record the warning of %s: %w", t.name, err)
		}
		text := tell.DueSoonText(t.name, &w)
		ev := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: t.name, Name: fmt.Sprintf("%s.warn%d", t.name, now.UnixNano())},
			EventTime:  metav1.NewMicroTime(now),
			Regarding: corev1.ObjectReference{APIVersion: m.GetAPIVersion(), Kind: m.GetKind(), Namespace: t.name, Name: t.name,
				UID: m.GetUID(), ResourceVersion: m.GetResourceVersion()},
			Type: corev1.EventTypeNormal, Reason: tell.DueSoon, Action: w.Action, Note: text,
			ReportingController: "nsman.k8s.consol.de/sweep", ReportingInstance: "deliveries-floor",
		}
		if _, err := kube.EventsV1().Events(t.name).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create the DueSoon Event of %s: %w", t.name, err)
		}
		body, err := json.Marshal(tell.Notification{
			Manager: tell.NotificationManager{Namespace: t.name, Name: t.name}, Target: t.name, Policy: w.Policy, Action: w.Action,
			Result: tell.ResultPending, Event: tell.EventDueSoon, Due: &due, Message: text, Time: now, Sweep: "deliveries-floor", Version: "floor",
		})
		if err != nil {
			return err
		}
		return post(ctx, client, url, body, status.Digest("%s/%s", t.name, due.Format(time.RFC3339)))
	})
}

// post POSTs body to url as nsman's webhook sender does (JSON, an
// Idempotency-Key), and wants a 2xx answer.
func post(ctx context.Context, client *http.Client, url string, body []byte, key string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.IdempotencyKeyHeader, key)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST: %s", resp.Status)
	}
	return nil
}

// warnRows are the warn part's rows, found by label.
type warnRows struct {
	first, noop, warn, again, floor measurement
}

func warnRowsOf(rows rowSet) (warnRows, int) {
	n := rows[0].N
	return warnRows{
		first: rows.must(n, firstSweepLabel), noop: rows.must(n, noopLabel), warn: rows.must(n, warnSweepLabel(n)),
		again: rows.must(n, warnAgainLabel), floor: rows.must(n, warnFloorLabel(n)),
	}, n
}

// warnTargets computes the target of the warning sweep (issue 48): its
// time against the no-op sweep's plus the deliveries floor's.
func warnTargets(rows rowSet) []target {
	if len(rows) == 0 {
		return nil
	}
	r, n := warnRowsOf(rows)
	base := r.noop.Wall + r.floor.Wall
	x := ratio(r.warn.Wall, base)
	return []target{setAt(warnSize, target{N: n, Source: "48", Met: x <= warnBound,
		What:     fmt.Sprintf("warnings: sweep that warns %d managers ≤ %.1f × (no-op sweep + deliveries floor)", n, warnBound),
		Measured: fmt.Sprintf("%s / (%s + %s = %s) = %.2f×", r.warn.at(), r.noop.at(), r.floor.at(), sec(base), x)})}
}

// warnMethod describes the warn part.
func warnMethod(b *strings.Builder, rows rowSet) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	_, n := warnRowsOf(rows)
	p("A fresh control plane of its own, at N = %d. Every manager is in its own namespace and targets it, with one policy, `cleanup`:\n", n)
	p("`TTL` → DELETE, `warnBefore: [\"%s\"]`. Seeded: N managers with ttlSeconds %d (due in %.0f hours, not within the threshold),\n",
		warnThreshold, int64(warnLaterTTL/time.Second), warnLaterTTL.Hours())
	p("for the no-op sweeps; then, for each of %d rounds, N managers with ttlSeconds %d (due in %.0f hours, within it) for the warning\n",
		warnRounds, int64(warnSoonTTL/time.Second), warnSoonTTL.Hours())
	p("sweep and N more for the deliveries floor, each set seeded just before its round, untimed, so that each warning sweep warns N.\n")
	p("Every sweep selects one set (`-l %s=SET`) and runs with `--notify-url-file` naming a receiver in the driver (an HTTP server\n", setLabel)
	p("on loopback that answers 200 and counts the notifications of event `dueSoon` by target) and `--notify-format json`.\n\n")
	p("nsman's first sweep over the managers not within the threshold records their status. Then each round measures, in order: the\n")
	p("no-op sweep over them; the warning sweep over the round's set, which must send one notification per manager, write a `DueSoon`\n")
	p("Event each and leave `status.warned` on each; the same sweep again, which must warn of none and write nothing (once); and the\n")
	p("deliveries floor. The generator fails the run unless every warning sweep delivered exactly N `dueSoon` notifications, one per\n")
	p("manager, every other sweep none, and the no-op sweeps and the sweeps again wrote nothing. The rows are the median runs; the\n")
	p("notes list every run.\n\n")
	p("The deliveries floor is minimal code in the driver, as the ServiceAccount, unthrottled, with %d workers (nsman's default\n", floorConcurrency)
	p("`--concurrency`), handed the managers of its round's set (listed untimed): per manager, a merge patch of the manager's status\n")
	p("subresource, conditional on the listed resourceVersion, that sets `status.warned`; the `DueSoon` Event (events.k8s.io/v1)\n")
	p("regarding the manager; and the POST of the notification (JSON, with an `Idempotency-Key`) to the same receiver.\n\n")
}

// warnNote writes the part's note line: the warning sweep against its
// target's base and what it wrote per manager against the floor.
func warnNote(b *strings.Builder, rows rowSet) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	r, n := warnRowsOf(rows)
	each, perManager, besides := writesOf(r.warn, n)
	floorEach, perFloor, _ := writesOf(r.floor, n)
	p("\nThe warning sweep took %s: %.2f× the no-op sweep (%s) plus the deliveries floor (%s), against the %.1f× bound;\n",
		r.warn.at(), ratio(r.warn.Wall, r.noop.Wall+r.floor.Wall), r.noop.at(), r.floor.at(), warnBound)
	p("less the no-op sweep, %s, %.2f× the floor. It wrote %d requests per manager (%s)", sec(r.warn.Wall-r.noop.Wall), ratio(r.warn.Wall-r.noop.Wall, r.floor.Wall),
		perManager, cmpOr(describe(each), "none"))
	if len(besides) > 0 {
		p(" and %s besides", describe(besides))
	}
	p(",\nwhere the floor writes %d (%s); the sweep again took %s and wrote %d.\n", perFloor, cmpOr(describe(floorEach), "none"), r.again.at(), r.again.writes())
}
