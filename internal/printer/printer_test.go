package printer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nsman/nsman/report"
)

// The streamed JSON report is byte for byte what json.Encoder writes.
func TestWriteJSONMatchesTheEncoder(t *testing.T) {
	due := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	entries := []report.Entry{
		{Namespace: "a", Name: "a", Target: "a", State: report.StateWaiting, Due: &due, Message: "TTL <1h> & more",
			Conditions: []report.Condition{{Policy: "p", Detail: "d \"quoted\" ü", Due: &due}}},
		{Namespace: "b", Name: "b", State: report.StateInvalid, Problems: []string{"spec.policies: Required value"}},
		{Namespace: "c", Name: "c", State: report.StateFired, Policy: "p", Action: "SCALE_DOWN", Effects: []string{"scale Deployment/web from 3 to 0"}},
		{Namespace: "d", Name: "leftovers", Rule: true, Target: "e2e-1", State: report.StateDone, Policy: "p", Action: "DELETE"},
	}
	summary := report.Summary{Now: due, Managers: 3, States: map[report.State]int{report.StateWaiting: 1, report.StateInvalid: 1, report.StateFired: 1},
		Requests: map[string]int{"get": 4, "patch": 2}, DurationSeconds: 0.25, Shard: &report.Shard{Index: 1, Count: 2, Skipped: 4}}
	// Past a chunk, in order across chunks (each marshalled side by side).
	var many []report.Entry
	for i := range 2*jsonChunk + 7 {
		e := entries[i%len(entries)]
		e.Target = fmt.Sprintf("e2e-%04d", i)
		many = append(many, e)
	}
	for name, r := range map[string]report.Report{
		"past a chunk": {Version: report.ReportVersion, Entries: many, Summary: summary},
		"entries":      {Version: report.ReportVersion, Entries: entries, Summary: summary},
		"one entry":    {Version: report.ReportVersion, Entries: entries[:1], Summary: summary},
		"no entries":   {Version: report.ReportVersion, Entries: []report.Entry{}, Summary: summary},
		"nil":          {Version: report.ReportVersion},
	} {
		t.Run(name, func(t *testing.T) {
			var want, got bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetIndent("", "  ")
			if err := enc.Encode(r); err != nil {
				t.Fatal(err)
			}
			if err := writeJSON(&got, r); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("streamed:\n%s\nencoder:\n%s", got.String(), want.String())
			}
			// Every list a list, never null: jq '.managers[]' works on an
			// empty cluster's report.
			if strings.Contains(got.String(), "null") {
				t.Errorf("report holds a null:\n%s", got.String())
			}
		})
	}
}

// A rule's entries say so in the table, next to the namespace each is on.
func TestTextReportMarksRules(t *testing.T) {
	r := report.Report{Version: report.ReportVersion, Entries: []report.Entry{
		{Namespace: "d", Name: "leftovers", Rule: true, Target: "e2e-1", State: report.StateDone},
		{Namespace: "a", Name: "a", Target: "a", State: report.StateWaiting},
	}}
	var out bytes.Buffer
	if err := Report(&out, Text, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.HasPrefix(lines[1], "d/leftovers (rule)") || !strings.Contains(lines[1], "e2e-1") {
		t.Errorf("rule line %q, want it marked (rule) with its namespace", lines[1])
	}
	if strings.Contains(lines[2], "(rule)") {
		t.Errorf("manager line %q marked as a rule", lines[2])
	}
}

// The table says what each action freed, in a column, and what the sweep
// freed (would free, dry) in all; a stuck namespace's reasons, and how
// many namespaces are stuck.
func TestTextReportSaysReclaimedAndStuck(t *testing.T) {
	since := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	freed := report.Reclaimed{CPU: resource.MustParse("1500m"), Memory: resource.MustParse("2Gi"), Storage: resource.MustParse("10Gi"), LoadBalancers: 1}
	stuck := &report.Stuck{Since: since, Reasons: []report.StuckReason{{Reason: report.StuckFinalizersRemaining, Message: "example.com/hold in 1 resource instances"}}}
	for _, dry := range []bool{false, true} {
		r := report.Report{Version: report.ReportVersion, Entries: []report.Entry{
			{Namespace: "a", Name: "a", Target: "a", State: report.StateFired, Action: "DELETE", Reclaimed: &freed},
			{Namespace: "b", Name: "b", Target: "held", State: report.StateTargetTerminating, Stuck: stuck},
		}, Summary: report.Summary{DryRun: dry, Reclaimed: &freed, Stuck: 1}}
		var out bytes.Buffer
		if err := Report(&out, Text, r); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(out.String(), "\n")
		verb := map[bool]string{false: "reclaimed: ", true: "would reclaim: "}[dry]
		for _, want := range []string{"RECLAIMED", "cpu=1500m mem=2Gi storage=10Gi lb=1", "stuck, FinalizersRemaining: example.com/hold in 1 resource instances",
			verb + "cpu 1500m, memory 2Gi, storage 10Gi, 1 load balancer(s)", "1 namespace(s) stuck in Terminating"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("dry run %v: report lacks %q:\n%s", dry, want, out.String())
			}
		}
		if !strings.Contains(lines[2], " - ") {
			t.Errorf("a line without reclaim %q: want a dash in its column", lines[2])
		}
	}
}

// A SLEEP's warnings are lines of their own under its row, after its
// effects.
func TestTextReportSaysWarnings(t *testing.T) {
	r := report.Report{Version: report.ReportVersion, Entries: []report.Entry{
		{Namespace: "a", Name: "a", Target: "a", State: report.StateFired, Action: "SLEEP", Effects: []string{"scale Deployment/web from 2 to 0"},
			Warnings: []string{"discovery failed for API group(s) metrics.example.com/v1beta1: their kinds were neither put to sleep nor woken"}},
	}}
	var out bytes.Buffer
	if err := Report(&out, Text, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.HasSuffix(lines[2], "  scale Deployment/web from 2 to 0") ||
		!strings.HasSuffix(lines[3], "  warning: discovery failed for API group(s) metrics.example.com/v1beta1: their kinds were neither put to sleep nor woken") {
		t.Errorf("report:\n%s\nwant the effect, then the warning, under the row", out.String())
	}
}

// The owner of an entry's target is a line of its own under its row,
// before its effects; an entry without one has none.
func TestTextReportSaysOwner(t *testing.T) {
	r := report.Report{Version: report.ReportVersion, Entries: []report.Entry{
		{Namespace: "a", Name: "a", Rule: true, Target: "pr-12", Owner: "applications.argoproj.io/argocd/pr-12", State: report.StateFired, Action: "DELETE", Effects: []string{"delete namespace pr-12"}},
		{Namespace: "a", Name: "a", Rule: true, Target: "pr-13", State: report.StateWaiting},
	}}
	var out bytes.Buffer
	if err := Report(&out, Text, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.HasSuffix(lines[2], "  owner: applications.argoproj.io/argocd/pr-12") || !strings.HasSuffix(lines[3], "  delete namespace pr-12") ||
		!strings.Contains(lines[4], "pr-13") || strings.Count(out.String(), "owner:") != 1 {
		t.Errorf("report:\n%s\nwant the owner of pr-12 under its row, before its effect, and none for pr-13", out.String())
	}
}

// A trusted namespace that does not exist is said after the summary, with
// why it matters; the stuck line still follows.
func TestTextReportSaysMissingTrusted(t *testing.T) {
	r := report.Report{Version: report.ReportVersion, Summary: report.Summary{MissingTrusted: []string{"namespace-manager", "ops"}, Stuck: 1}}
	var out bytes.Buffer
	if err := Report(&out, Text, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"trusted namespace(s) that do not exist: namespace-manager, ops: whoever may create namespaces may create one", "1 namespace(s) stuck in Terminating"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := Report(&out, Text, report.Report{Version: report.ReportVersion}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "trusted") {
		t.Errorf("a report with every trusted namespace there says:\n%s", out.String())
	}
}

// The summary says how many traffic queries were answered, when a sweep
// ran any, and nothing of traffic else.
func TestTextReportSaysTrafficQueries(t *testing.T) {
	for _, c := range []struct {
		queries map[string]int
		want    string
	}{
		{map[string]int{"answered": 2, "unanswered": 1}, "traffic queries: 2 answered, 1 unanswered\n"},
		{nil, ""},
	} {
		var out bytes.Buffer
		if err := Report(&out, Text, report.Report{Version: report.ReportVersion, Summary: report.Summary{TrafficQueries: c.queries}}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), "traffic"); got != (c.want != "") || !strings.Contains(out.String(), c.want) {
			t.Errorf("queries %v: report\n%s\nwant it to say %q", c.queries, out.String(), c.want)
		}
	}
}

// -o wide prints the owner of an entry's target in a column of its own,
// "-" for none, rather than on a line under its row; the lines under a
// row stay in the message's column.
func TestWideReportHasAnOwnerColumn(t *testing.T) {
	r := report.Report{Version: report.ReportVersion, Entries: []report.Entry{
		{Namespace: "a", Name: "a", Rule: true, Target: "pr-12", Owner: "applications.argoproj.io/argocd/pr-12", State: report.StateFired, Action: "DELETE", Message: "TTL elapsed", Effects: []string{"delete namespace pr-12"}},
		{Namespace: "a", Name: "a", Rule: true, Target: "pr-13", State: report.StateWaiting, Message: "TTL not elapsed"},
	}}
	var out bytes.Buffer
	if err := Report(&out, Wide, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	header, owned, effect, unowned := lines[0], lines[1], lines[2], lines[3]
	column := func(line, of string) int { return strings.Index(line, of) }
	if !strings.Contains(header, "RECLAIMED  OWNER") || column(owned, "applications.argoproj.io/argocd/pr-12") != column(header, "OWNER") ||
		column(owned, "TTL elapsed") != column(header, "MESSAGE") || column(unowned, "TTL not elapsed") != column(header, "MESSAGE") ||
		strings.TrimSpace(unowned[column(header, "OWNER"):column(header, "MESSAGE")]) != "-" ||
		column(effect, "delete namespace pr-12") != column(header, "MESSAGE")+2 || strings.Contains(out.String(), "owner:") {
		t.Errorf("report:\n%s\nwant pr-12's owner in the OWNER column, - for pr-13, the effect under the message and no owner: line", out.String())
	}
	if err := Report(&out, "jsonpath", r); err == nil || !strings.Contains(err.Error(), "want text, wide, json, yaml, name") {
		t.Errorf("-o jsonpath: %v, want the formats named", err)
	}
}

// DUE says how far from the sweep's clock (the summary's now, not the
// printer's) an entry is due, as kubectl says an age; -o wide adds the
// time itself in DUE AT.
func TestDueAsKubectlSaysIt(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	for _, c := range []struct {
		due      *time.Time
		text     string
		wideTime string
	}{
		{at(8 * time.Minute), "in 8m", "2026-11-22T09:08:00Z"},
		{at(90 * time.Second), "in 90s", "2026-11-22T09:01:30Z"},
		{at(26 * time.Hour), "in 26h", "2026-11-23T11:00:00Z"},
		{at(-3 * time.Hour), "3h ago", "2026-11-22T06:00:00Z"},
		{at(300 * time.Millisecond), "now", "2026-11-22T09:00:00Z"},
		{nil, "-", "-"},
	} {
		r := report.Report{Version: report.ReportVersion, Entries: []report.Entry{{Namespace: "a", Name: "a", Target: "a", State: report.StateWaiting, Due: c.due}},
			Summary: report.Summary{Now: now}}
		for format, want := range map[string][]string{Text: {"DUE", c.text}, Wide: {"DUE", c.text, "DUE AT", c.wideTime}} {
			var out bytes.Buffer
			if err := Report(&out, format, r); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(out.String(), "\n")
			header, row := lines[0], lines[1]
			for i := 0; i < len(want); i += 2 {
				col := strings.Index(header, want[i]+" ")
				if col < 0 || !strings.HasPrefix(row[col:], want[i+1]+" ") {
					t.Errorf("-o %s, due %v: %s %q, want %q:\n%s", format, c.due, want[i], row[max(col, 0):], want[i+1], out.String())
				}
			}
			if format == Text && strings.Contains(out.String(), "DUE AT") {
				t.Errorf("-o text has a DUE AT column:\n%s", out.String())
			}
		}
	}
}
