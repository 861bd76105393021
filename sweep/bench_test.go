package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/decide"
	"github.com/nsman/nsman/internal/execute"
	"github.com/nsman/nsman/internal/listpage"
	"github.com/nsman/nsman/internal/listpage/listpagetest"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// benchManagers is the fleet size nsman must stay cheap at (issue 6).
const benchManagers = 10_000

// benchEntries returns n waiting entries as a sweep reports them: even ones
// wait on a TTL, odd ones on pods that have not succeeded.
func benchEntries(n int, now time.Time) []report.Entry {
	entries := make([]report.Entry, 0, n)
	for i := range n {
		name := fmt.Sprintf("team-%05d", i)
		e := report.Entry{Namespace: name, Name: name, Target: name, State: report.StateWaiting}
		if i%2 == 0 {
			due := now.Add(time.Duration(i) * time.Second).UTC()
			e.Due = &due
			e.Message = "TTL 24h0m0s elapses at " + due.Format(time.RFC3339)
			e.Conditions = []report.Condition{{Policy: "expire", Detail: e.Message, Due: &due}}
		} else {
			e.Message = "not every pod matching app=e2e Succeeded: pod e2e-0 has not succeeded"
			e.Conditions = []report.Condition{{Policy: "tests done", Detail: e.Message}}
		}
		entries = append(entries, e)
	}
	return entries
}

// BenchmarkStatusFirstSweep builds the status patch of 10,000 managers that
// have no status yet: what the first sweep writes.
func BenchmarkStatusFirstSweep(b *testing.B) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	entries := benchEntries(benchManagers, now)
	store := record.StatusLocation{Subresource: true}
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range entries {
			var next status.Status
			next.Observe(e, 1, now)
			if _, changed := store.Update(status.Status{}, next, "", false); !changed {
				b.Fatal("no patch for a manager without status")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchManagers), "ns/manager")
}

// BenchmarkStatusSteadyState reads the stored status of 10,000 managers and
// finds that nothing changed: what every later no-op sweep pays per manager
// to write nothing.
func BenchmarkStatusSteadyState(b *testing.B) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	entries := benchEntries(benchManagers, now)
	store := record.StatusLocation{Subresource: true}
	managers := make([]listpage.Listed, len(entries))
	for i, e := range entries {
		var st status.Status
		st.Observe(e, 1, now)
		managers[i] = listpage.Listed{Status: json.RawMessage(write.MustJSON(st))}
	}
	b.ReportAllocs()
	for b.Loop() {
		for i, m := range managers {
			stored := store.Read(m)
			next := stored
			next.Observe(entries[i], 1, now.Add(time.Minute))
			if _, changed := store.Update(stored, next, "", false); changed {
				b.Fatalf("%s: steady state writes a patch", entries[i].Name)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchManagers), "ns/manager")
}

// BenchmarkReportJSON encodes the report of a 10,000-manager sweep as
// `nsman sweep -o json` prints it (indented).
func BenchmarkReportJSON(b *testing.B) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := report.Report{Version: report.ReportVersion, Entries: benchEntries(benchManagers, now), Summary: report.Summary{
		Now: now, Managers: benchManagers, States: map[report.State]int{report.StateWaiting: benchManagers},
		Requests: map[string]int{"get": 5041},
	}}
	b.ReportAllocs()
	var size int
	for b.Loop() {
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
		_, _ = io.Discard.Write(data)
	}
	b.ReportMetric(float64(size), "bytes/report")
}

// BenchmarkRulePairs evaluates one rule (a TTL of a day, then
// PODS_SUCCEED) on 10,000 namespaces that each hold a pod that has not
// succeeded, screened with the sweep's index: what a no-op sweep of a rule
// pays per namespace, requests aside.
func BenchmarkRulePairs(b *testing.B) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.consol.de/v1beta1", "kind": "NamespaceManager",
		"metadata": map[string]any{"name": "bench", "namespace": "rules", "uid": "u", "generation": int64(1)},
		"spec": map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"ci": "e2e"}},
			"policies": []any{
				map[string]any{"name": "ttl", "condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(86400)}}, "action": map[string]any{"type": "DELETE"}},
				map[string]any{"name": "pods", "condition": map[string]any{"type": "PODS_SUCCEED", "params": map[string]any{"initialDelaySeconds": int64(0), "podLabels": map[string]any{"app": "e2e"}}}, "action": map[string]any{"type": "DELETE"}},
			},
		},
	}}
	m, problems := policy.Parse(obj)
	if len(problems) > 0 {
		b.Fatal(problems)
	}
	s := &Sweeper{cfg: Config{MaxHold: decide.DefaultMaxHold, PageSize: DefaultPageSize}}
	r := &sweepRun{now: now, stop: context.Background(), share: execute.NewFairShare(0, "")}
	r.eval = &decide.Evaluator{Now: now, Clock: func() time.Time { return now }, MaxHold: decide.DefaultMaxHold, Budget: r.share}
	r.exec = &execute.Executor{Now: now, Stop: r.stop, Places: r.share}
	ru := s.newRuleRun(r, obj, m, status.Status{})
	x := probe.NewIndex()
	for i := range benchManagers {
		name := fmt.Sprintf("e2e-%05d", i)
		ru.pairs = append(ru.pairs, cluster.NamespaceOf(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name),
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)), Labels: map[string]string{"ci": "e2e"}}}))
		x.Add(name, "pod e2e-0 has not succeeded", map[string]string{"app": "e2e"})
	}
	ru.entries = make([]report.Entry, len(ru.pairs))
	b.ReportAllocs()
	for b.Loop() {
		for i := range ru.pairs {
			var passed bool
			if _, work := ru.evaluate(context.Background(), i, x.Answers(nil, &passed)); work || passed || ru.entries[i].State != report.StateWaiting {
				b.Fatalf("%s: %s (%s), want waiting", ru.pairs[i].Name, ru.entries[i].State, ru.entries[i].Message)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchManagers), "ns/pair")
}

// benchPages is what listing benchManagers returns: pages of DefaultPageSize
// managers as the API server stores them after kubectl apply and a sweep.
func benchPages() [][]byte {
	var pages [][]byte
	for first := 0; first < benchManagers; first += DefaultPageSize {
		items := make([]string, 0, DefaultPageSize)
		for i := first; i < min(first+DefaultPageSize, benchManagers); i++ {
			items = append(items, listpagetest.StoredManager(i))
		}
		pages = append(pages, []byte(listpagetest.ListPage("", items...)))
	}
	return pages
}

// BenchmarkDecodePage decodes the list of 10,000 managers as a sweep does,
// and reads each one's status: what listing costs nsman itself.
func BenchmarkDecodePage(b *testing.B) {
	pages := benchPages()
	store := record.StatusLocation{Subresource: true}
	b.ReportAllocs()
	for b.Loop() {
		for _, data := range pages {
			page, err := listpage.DecodePage(data)
			if err != nil {
				b.Fatal(err)
			}
			for i := range page.Items {
				if st := store.Read(page.Items[i].Listed()); st.State != report.StateWaiting {
					b.Fatalf("status read as %+v", st)
				}
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchManagers), "ns/manager")
}

// BenchmarkDecodePageUnstructured decodes the same list as the dynamic
// client does, for comparison: every field of every manager into maps.
func BenchmarkDecodePageUnstructured(b *testing.B) {
	pages := benchPages()
	b.ReportAllocs()
	for b.Loop() {
		for _, data := range pages {
			obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, data)
			if err != nil {
				b.Fatal(err)
			}
			if n := len(obj.(*unstructured.UnstructuredList).Items); n != DefaultPageSize {
				b.Fatalf("%d managers in a page", n)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchManagers), "ns/manager")
}
