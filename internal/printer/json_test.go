package printer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/report"
)

// trafficEntries are n entries as a no-op sweep of make bench's traffic
// part reports them: a rule's pairs waiting on IDLE, which traffic keeps
// awake.
func trafficEntries(n int, now time.Time) []report.Entry {
	entries := make([]report.Entry, n)
	due := now.Add(20 * time.Second)
	requests := 20.0
	for i := range entries {
		detail := fmt.Sprintf("last activity: requests within 20s (traffic: preset ingress-nginx) at %s; idle 20s at %s", now.Format(time.RFC3339), due.Format(time.RFC3339))
		entries[i] = report.Entry{Namespace: "bench-traffic", Name: "idle", Rule: true, Target: fmt.Sprintf("tr-%05d", i),
			State: report.StateWaiting, Due: &due, Message: detail,
			Conditions:   []report.Condition{{Policy: "unused", Detail: detail, Due: &due}},
			LastActivity: &report.LastActivity{At: metav1.NewTime(now), What: "requests within 20s (traffic: preset ingress-nginx)"},
			Traffic:      &report.Traffic{Source: "preset ingress-nginx", WindowSeconds: 20, Requests: &requests}}
	}
	return entries
}

// BenchmarkPrintJSON prints, as `nsman sweep -o json` does, the report of
// a no-op sweep of make bench's traffic part: 1,000 entries.
func BenchmarkPrintJSON(b *testing.B) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := report.Report{Version: report.ReportVersion, Entries: trafficEntries(1000, now), Summary: report.Summary{
		Now: now, Managers: 1000, States: map[report.State]int{report.StateWaiting: 1000}, Requests: map[string]int{"get": 9},
		TrafficQueries: map[string]int{"answered": 1, "unanswered": 0},
	}}
	b.ReportAllocs()
	for b.Loop() {
		if err := Print(io.Discard, r, Options{Format: JSON}); err != nil {
			b.Fatal(err)
		}
	}
}

// The JSON report is, byte for byte, what json.Encoder with a two-space
// indent writes.
func TestJSONAsEncoderWrites(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []int{0, 1, 300} {
		entries := trafficEntries(n, now)
		if n > 0 {
			// Strings with what JSON escapes or would take for structure,
			// empty lists and objects kept, nesting.
			entries[0].Message = `a "quoted" {brace} [bracket], colon: back\slash <html> & é` + "\n\ttab\u2028"
			entries[0].Effects = []string{"", "[]", "{}", `\"`, `\\`}
			entries[0].Reclaimed = &report.Reclaimed{LoadBalancers: 2}
			entries[0].Stuck = &report.Stuck{Since: now, Reasons: []report.StuckReason{{Reason: "finalizers", Message: `"x": [1]`}}}
		}
		r := report.Report{Version: report.ReportVersion, Entries: entries, Summary: report.Summary{
			Now: now, Managers: n, States: map[report.State]int{}, Requests: map[string]int{}, MissingTrusted: []string{}}}
		var want, got bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
		if err := Print(&got, r, Options{Format: JSON}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%d entries: the report printed differs from json.Encoder's:\n%s\nwant:\n%s", n, got.String(), want.String())
		}
	}
}

// indent writes what json.Indent writes, of compact JSON.
func TestIndentAsJSONIndent(t *testing.T) {
	for _, src := range []string{
		`{}`, `[]`, `"x"`, `1.5`, `null`, `[[],{},[{}],{"a":[]}]`,
		`{"a":"\\","b":"\\\"]}","c":[1,-2,true,{"d":null,"e":"{:,}"}],"f":{}}`,
		`{"u":"\u003chtml\u003e \u0026 \u2028","nested":[[[["deep"]]]]}`,
	} {
		for _, prefix := range []string{"", "    "} {
			var want bytes.Buffer
			if err := json.Indent(&want, []byte(src), prefix, "  "); err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			if got := indent(nil, []byte(src), prefix); string(got) != want.String() {
				t.Errorf("%s, prefix %q: indent wrote\n%s\nwant\n%s", src, prefix, got, want.String())
			}
		}
	}
}
