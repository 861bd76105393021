package cmd

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nsman/nsman/internal/printer"
	"github.com/nsman/nsman/report"
)

// reportGoldenDir holds what nsman sweep prints of goldenReport, a file a
// format (text.golden, wide.golden, name.golden) and one for --state
// (text_fired_failed.golden), so that a change in what users read is seen
// in review. `make docs` (go test ./cmd -run TestReportGolden -update)
// rewrites them.
var reportGoldenDir = filepath.Join("testdata", "report")

// TestReportGolden fails when what a sweep's report prints differs from
// its golden file.
func TestReportGolden(t *testing.T) {
	r := goldenReport()
	for _, s := range report.States {
		if r.Summary.States[s] == 0 {
			t.Errorf("goldenReport has no entry in state %s: give it one", s)
		}
	}
	for _, c := range []struct {
		file, format string
		states       []report.State
	}{
		{"text.golden", printer.Text, nil},
		{"wide.golden", printer.Wide, nil},
		{"name.golden", printer.Name, nil},
		{"text_fired_failed.golden", printer.Text, []report.State{report.StateFired, report.StateFailed}},
	} {
		var out bytes.Buffer
		if err := printer.Report(&out, c.format, r, c.states...); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, filepath.Join(reportGoldenDir, c.file), fmt.Sprintf("-o %s %v", c.format, c.states), out.Bytes())
	}
}

// goldenReport is a sweep's report with an entry in every state, a rule
// and its pairs, an owner, what was reclaimed, a SLEEP's warnings, a
// namespace stuck in Terminating, and the lines a summary may add.
func goldenReport() report.Report {
	now := time.Date(2026, 11, 24, 9, 40, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	freed := report.Reclaimed{CPU: resource.MustParse("1500m"), Memory: resource.MustParse("2Gi"), Storage: resource.MustParse("10Gi"), LoadBalancers: 1}
	entries := []report.Entry{
		{Namespace: "team-a", Name: "ttl", Target: "team-a", State: report.StateWaiting, Due: at(8 * time.Minute), Message: "TTL 1h elapses at 2026-11-24T09:48:00Z"},
		{Namespace: "team-a", Name: "webhook", Target: "team-a", Policy: "notify", Action: "WEBHOOK", State: report.StateDeferred, Due: at(-3 * time.Hour), Message: "the receiver timed out; attempted again at the next sweep"},
		{Namespace: "team-b", Name: "scale", Target: "team-b", Policy: "night", Action: "SCALE_DOWN", State: report.StateFired, Reclaimed: &freed,
			Message: "TTL elapsed", Effects: []string{"scale Deployment/web from 3 to 0"}},
		{Namespace: "team-b", Name: "sleep", Target: "team-b", Policy: "sleep", Action: "SLEEP", State: report.StateAsleep, Message: "asleep since 2026-11-23T20:00:00Z",
			Warnings: []string{"discovery failed for API group(s) metrics.example.com/v1beta1: their kinds were neither put to sleep nor woken"}},
		{Namespace: "team-c", Name: "broken", State: report.StateInvalid, Problems: []string{"spec.policies: Required value"}},
		{Namespace: "team-c", Name: "foreign", Target: "kube-system", State: report.StateForbidden, Message: "kube-system is protected"},
		{Namespace: "team-c", Name: "gone", Target: "team-gone", State: report.StateTargetMissing, Message: "namespace team-gone does not exist"},
		{Namespace: "team-c", Name: "old", Target: "team-c", State: report.StateDeactivated, Message: "spec.deactivated is true"},
		{Namespace: "team-d", Name: "busy", Target: "team-d", Policy: "p", Action: "DELETE", State: report.StateBusy, Message: "another sweep holds a claim until 2026-11-24T09:45:00Z"},
		{Namespace: "team-d", Name: "failing", Target: "team-d", Policy: "p", Action: "SCALE_DOWN", State: report.StateFailed, Message: "scale Deployment/web: forbidden"},
		{Namespace: "team-e", Name: "dry", Target: "team-e", Policy: "p", Action: "DELETE", State: report.StatePlanned, Message: "every pod matching role=smoke-test Succeeded"},
		{Namespace: "namespace-manager", Name: "previews", Rule: true, Target: "pr-12", Owner: "applications.argoproj.io/argocd/pr-12", Policy: "owner gone", Action: "DELETE",
			State: report.StateFired, Reclaimed: &freed, Message: "the owner is gone", Effects: []string{"delete namespace pr-12"}},
		{Namespace: "namespace-manager", Name: "previews", Rule: true, Target: "pr-13", State: report.StateDone, Message: "deleted in this generation of the rule"},
		{Namespace: "namespace-manager", Name: "previews", Rule: true, Target: "pr-14", State: report.StateGoverned, Message: "team-f/pr-14 governs it"},
		{Namespace: "namespace-manager", Name: "previews", Rule: true, Target: "preview-4711", Policy: "delete after 7 days", Action: "DELETE", State: report.StateTargetTerminating,
			Message: "namespace preview-4711 is stuck in Terminating since 2026-11-24T09:12:03Z (FinalizersRemaining); nsman explain preview-4711 says what holds it",
			Stuck:   &report.Stuck{Since: now.Add(-28 * time.Minute), Reasons: []report.StuckReason{{Reason: report.StuckFinalizersRemaining, Message: "example.com/cleanup in 2 resource instances"}}}},
	}
	states := map[report.State]int{}
	for _, e := range entries {
		states[e.State]++
	}
	total := freed
	total.Add(freed)
	return report.Report{Version: report.ReportVersion, Entries: entries, Summary: report.Summary{
		Now: now, Managers: len(entries), States: states, Requests: map[string]int{"get": 30, "list": 4, "patch": 3, "delete": 1}, DurationSeconds: 0.42,
		TrafficQueries: map[string]int{"answered": 2, "unanswered": 1}, Reclaimed: &total, ReclaimUnknown: 1, MissingTrusted: []string{"ops"}, Stuck: 1,
	}}
}
