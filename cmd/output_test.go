package cmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/sweep"
)

// The streamed JSON report is byte for byte what json.Encoder writes.
func TestWriteJSONMatchesTheEncoder(t *testing.T) {
	due := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	entries := []sweep.Entry{
		{Namespace: "a", Name: "a", Target: "a", State: sweep.StateWaiting, Due: &due, Message: "TTL <1h> & more",
			Conditions: []sweep.Condition{{Policy: "p", Detail: "d \"quoted\" ü", Due: &due}}},
		{Namespace: "b", Name: "b", State: sweep.StateInvalid, Problems: []string{"spec.policies: Required value"}},
		{Namespace: "c", Name: "c", State: sweep.StateFired, Policy: "p", Action: "SCALE_DOWN", Effects: []string{"scale Deployment/web from 3 to 0"}},
		{Namespace: "d", Name: "leftovers", Rule: true, Target: "e2e-1", State: sweep.StateDone, Policy: "p", Action: "DELETE"},
	}
	summary := sweep.Summary{Now: due, Managers: 3, States: map[sweep.State]int{sweep.StateWaiting: 1, sweep.StateInvalid: 1, sweep.StateFired: 1},
		Requests: map[string]int{"get": 4, "patch": 2}, DurationSeconds: 0.25, Shard: &sweep.Shard{Index: 1, Count: 2, Skipped: 4}}
	for name, r := range map[string]sweep.Report{
		"entries":    {Version: sweep.ReportVersion, Entries: entries, Summary: summary},
		"one entry":  {Version: sweep.ReportVersion, Entries: entries[:1], Summary: summary},
		"no entries": {Version: sweep.ReportVersion, Entries: []sweep.Entry{}, Summary: summary},
		"nil":        {Version: sweep.ReportVersion},
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
	r := sweep.Report{Version: sweep.ReportVersion, Entries: []sweep.Entry{
		{Namespace: "d", Name: "leftovers", Rule: true, Target: "e2e-1", State: sweep.StateDone},
		{Namespace: "a", Name: "a", Target: "a", State: sweep.StateWaiting},
	}}
	var out bytes.Buffer
	if err := writeReport(&out, "text", r); err != nil {
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
