package printer

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nsman/nsman/report"
)

// -o yaml is the JSON's mirror: read back as JSON, it is the JSON report,
// field for field and value for value.
func TestYAMLMirrorsJSON(t *testing.T) {
	due := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	for name, r := range map[string]report.Report{
		"entries": {Version: report.ReportVersion, Entries: []report.Entry{
			{Namespace: "a", Name: "a", Target: "a", State: report.StateWaiting, Due: &due, Message: "TTL: <1h> \"quoted\" ü\nnext line",
				Conditions: []report.Condition{{Policy: "p", Detail: "yes", Due: &due}}},
			{Namespace: "d", Name: "leftovers", Rule: true, Target: "e2e-1", State: report.StateDone, Policy: "p", Action: "DELETE", PutBack: 3},
		}, Summary: report.Summary{Now: due, Managers: 2, States: map[report.State]int{report.StateWaiting: 1, report.StateDone: 1},
			Requests: map[string]int{"get": 4}, DurationSeconds: 0.25}},
		"no entries": {Version: report.ReportVersion},
	} {
		t.Run(name, func(t *testing.T) {
			var j, y bytes.Buffer
			if err := Report(&j, JSON, r); err != nil {
				t.Fatal(err)
			}
			if err := Report(&y, YAML, r); err != nil {
				t.Fatal(err)
			}
			back, err := yaml.YAMLToJSON(y.Bytes())
			if err != nil {
				t.Fatalf("YAML does not read back: %v\n%s", err, y.String())
			}
			var fromJSON, fromYAML any
			if err := json.Unmarshal(j.Bytes(), &fromJSON); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(back, &fromYAML); err != nil {
				t.Fatal(err)
			}
			if a, b := marshalIndent(fromJSON, ""), marshalIndent(fromYAML, ""); !bytes.Equal(a, b) {
				t.Errorf("YAML read back as JSON:\n%s\nwant the JSON report:\n%s", b, a)
			}
		})
	}
}

// -o name prints a line per entry as kubectl names its object: a manager
// or a rule by kind, group, namespace and name, a rule's pair by the
// namespace it acts on.
func TestNameReport(t *testing.T) {
	r := report.Report{Version: report.ReportVersion, Entries: []report.Entry{
		{Namespace: "team-a", Name: "ttl", Target: "team-a", State: report.StateWaiting},
		{Namespace: "ops", Name: "leftovers", Rule: true, State: report.StateInvalid},
		{Namespace: "ops", Name: "leftovers", Rule: true, Target: "e2e-1", State: report.StateFired},
		{Namespace: "ops", Name: "leftovers", Rule: true, Target: "e2e-\x1b[2J", State: report.StateFailed},
	}}
	var out bytes.Buffer
	if err := Report(&out, Name, r); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"namespacemanager.k8s.consol.de/team-a/ttl",
		"namespacemanager.k8s.consol.de/ops/leftovers",
		"namespace/e2e-1",
		`"namespace/e2e-\x1b[2J"`,
	}, "\n") + "\n"
	if out.String() != want {
		t.Errorf("-o name:\n%s\nwant:\n%s", out.String(), want)
	}
}

// Object prints another command's report as -o asks: JSON as the encoder
// writes it, YAML its mirror, the other formats by the command's own
// writer, which is told the format.
func TestObject(t *testing.T) {
	v := map[string]any{"namespace": "e2e-1", "checks": []any{map[string]any{"status": "ok"}}}
	write := func(out io.Writer, format string) error { _, err := io.WriteString(out, "as "+format+"\n"); return err }
	for _, c := range []struct{ format, want string }{
		{Text, "as text\n"},
		{Wide, "as wide\n"},
		{Name, "as name\n"},
		{JSON, "{\n  \"checks\": [\n    {\n      \"status\": \"ok\"\n    }\n  ],\n  \"namespace\": \"e2e-1\"\n}\n"},
		{YAML, "checks:\n- status: ok\nnamespace: e2e-1\n"},
	} {
		var out bytes.Buffer
		if err := Object(&out, c.format, v, write); err != nil || out.String() != c.want {
			t.Errorf("-o %s: %q, %v; want %q", c.format, out.String(), err, c.want)
		}
	}
}

// The names of -o name: a manager's, a rule's itself and a rule's pair's,
// each as the sweep's -o name names them; a name that would not print is
// quoted.
func TestNames(t *testing.T) {
	var out bytes.Buffer
	names := []string{ManagerName("team-a", "ttl"), EntryName("ops", "previews", true, ""), EntryName("ops", "previews", true, "pr-1"), EntryName("a", "b\x1b", false, "a")}
	if err := WriteNames(&out, names); err != nil {
		t.Fatal(err)
	}
	want := "namespacemanager.k8s.consol.de/team-a/ttl\nnamespacemanager.k8s.consol.de/ops/previews\nnamespace/pr-1\n\"namespacemanager.k8s.consol.de/a/b\\x1b\"\n"
	if out.String() != want {
		t.Errorf("names:\n%s\nwant:\n%s", out.String(), want)
	}
}

// --state prints only the entries in the states named, in every format;
// the summary's counts stay the sweep's, and the table says how many
// entries it left out.
func TestReportInStates(t *testing.T) {
	r := report.Report{Version: report.ReportVersion, Entries: []report.Entry{
		{Namespace: "a", Name: "a", Target: "a", State: report.StateWaiting},
		{Namespace: "b", Name: "b", Target: "b", State: report.StateFired},
		{Namespace: "c", Name: "c", Target: "c", State: report.StateWaiting},
		{Namespace: "d", Name: "d", Target: "d", State: report.StateFailed},
	}, Summary: report.Summary{Managers: 4, States: map[report.State]int{report.StateWaiting: 2, report.StateFired: 1, report.StateFailed: 1}}}
	states := []report.State{report.StateFired, report.StateFailed}
	printed := func(format string, states ...report.State) string {
		t.Helper()
		var out bytes.Buffer
		if err := Report(&out, format, r, states...); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if got := printed(Name, states...); got != "namespacemanager.k8s.consol.de/b/b\nnamespacemanager.k8s.consol.de/d/d\n" {
		t.Errorf("-o name --state fired,failed:\n%s", got)
	}
	for _, format := range []string{JSON, YAML} {
		var got report.Report
		if err := yaml.Unmarshal([]byte(printed(format, states...)), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Entries) != 2 || got.Entries[0].Name != "b" || got.Entries[1].Name != "d" || got.Summary.Managers != 4 || got.Summary.States[report.StateWaiting] != 2 {
			t.Errorf("-o %s --state fired,failed: %+v, want b and d, and the summary's counts of all four", format, got)
		}
	}
	for _, format := range []string{Text, Wide} {
		got := printed(format, states...)
		if strings.Contains(got, "a/a") || strings.Contains(got, "c/c") || !strings.Contains(got, "b/b") || !strings.Contains(got, "d/d") ||
			!strings.Contains(got, "4 managers (1 failed, 1 fired, 2 waiting)") || !strings.Contains(got, "2 of 4 entries shown (--state fired,failed), 2 left out\n") {
			t.Errorf("-o %s --state fired,failed:\n%s", format, got)
		}
		if all := printed(format); !strings.Contains(all, "a/a") || strings.Contains(all, "left out") {
			t.Errorf("-o %s without --state:\n%s", format, all)
		}
	}
}

// ParseStates takes every state, and refuses one that is none, naming
// them all.
func TestParseStates(t *testing.T) {
	got, err := ParseStates([]string{"fired", " failed"})
	if err != nil || !slices.Equal(got, []report.State{report.StateFired, report.StateFailed}) {
		t.Errorf("fired, failed: %v, %v", got, err)
	}
	if _, err := ParseStates([]string{"fired", "sleeping"}); err == nil ||
		err.Error() != `--state "sleeping": want one or more of `+StateList || !strings.Contains(StateList, "target-terminating, waiting, planned") {
		t.Errorf("sleeping: %v, want refused with every state named", err)
	}
}
