package report

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
)

// readBack compares a report with what its JSON reads back as: a Quantity,
// a metav1.Time or a time.Time reads back equal to its original without
// being the same bytes in memory; a nil list and an empty one differ.
var readBack = func() conversion.Equalities {
	e := equality.Semantic.Copy()
	if err := e.AddFunc(func(a, b time.Time) bool { return a.Equal(b) }); err != nil {
		panic(err)
	}
	return e
}()

// TestReportJSONListsAreNeverNull: jq '.managers[]' and '.summary.states | keys'
// must work on an empty cluster's report, so nothing in it is null.
func TestReportJSONListsAreNeverNull(t *testing.T) {
	for _, tt := range []struct {
		name                   string
		rep                    Report
		managers, states, reqs string
	}{
		{name: "the zero report", rep: Report{}, managers: `[]`, states: `{}`, reqs: `{}`},
		{name: "a versioned report of no manager", rep: Report{Version: ReportVersion, Summary: Summary{DryRun: true}},
			managers: `[]`, states: `{}`, reqs: `{}`},
		{name: "empty, not nil", rep: Report{Entries: []Entry{}, Summary: Summary{States: map[State]int{}, Requests: map[string]int{}}},
			managers: `[]`, states: `{}`, reqs: `{}`},
		{name: "counts without entries", rep: Report{Summary: Summary{States: map[State]int{StateFailed: 1}, Requests: map[string]int{"GET": 2}}},
			managers: `[]`, states: `{"failed":1}`, reqs: `{"GET":2}`},
		{name: "entries without counts", rep: Report{Entries: []Entry{{Namespace: "team", Name: "m", State: StateWaiting}}},
			managers: `[{"namespace":"team","name":"m","state":"waiting"}]`, states: `{}`, reqs: `{}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := json.Marshal(tt.rep)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Managers json.RawMessage `json:"managers"`
				Summary  struct {
					States   json.RawMessage `json:"states"`
					Requests json.RawMessage `json:"requests"`
				} `json:"summary"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			for _, f := range []struct{ field, got, want string }{
				{"managers", string(got.Managers), tt.managers},
				{"summary.states", string(got.Summary.States), tt.states},
				{"summary.requests", string(got.Summary.Requests), tt.reqs},
			} {
				if f.got != f.want {
					t.Errorf("%s = %s, want %s (in %s)", f.field, f.got, f.want, out)
				}
			}
		})
	}
}

// TestReportJSONRoundTrip: the stable schema loses nothing a sweep says, so
// whatever reads the JSON (the status, a tenant's jq) sees the report itself.
func TestReportJSONRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.UTC)
	due, held, frozen := now.Add(time.Hour), now.Add(2*time.Hour), now.Add(3*time.Hour)
	freed := Reclaimed{CPU: resource.MustParse("1500m"), Memory: resource.MustParse("2Gi"),
		Storage: resource.MustParse("10Gi"), LoadBalancers: 1}
	rep := Report{
		Version: ReportVersion,
		Entries: []Entry{
			{
				Namespace: "team", Name: "expire", Target: "team-dev", State: StateFired,
				Policy: "ttl", Action: "DELETE", Message: "expired",
				Conditions:        []Condition{{Policy: "ttl", Holds: true, Detail: "created 8d ago", Due: &due}},
				Effects:           []string{"delete Namespace/team-dev"},
				Undone:            []string{"kubectl: Deployment/web"},
				PutBack:           50,
				LeftAwake:         10,
				HeldUntil:         &held,
				HoldIgnored:       "ends beyond --max-hold",
				AnnotationIgnored: "does not parse",
				LastActivity:      &LastActivity{At: metav1.NewTime(now.Add(-time.Hour).Truncate(time.Second)), What: "pod web-1 created"},
				Reclaimed:         &freed,
			},
			{Namespace: "team", Name: "bad", State: StateInvalid, Problems: []string{"spec.policies: required", "spec.target: required"}},
			{Namespace: "team", Name: "later", State: StateWaiting, Due: &due},
			{
				Namespace: "ops", Name: "rule", Rule: true, Target: "old", State: StateTargetTerminating,
				Stuck: &Stuck{Since: now.Add(-24 * time.Hour), Reasons: []StuckReason{
					{Reason: StuckFinalizersRemaining, Message: "example.com/hold in 3 resource instances"},
					{Reason: StuckNamespaceFinalizers, Message: "kubernetes"},
				}},
			},
		},
		Summary: Summary{
			Now: now, DryRun: true, Managers: 4,
			Shard:            &Shard{Index: 1, Count: 3, Skipped: 7},
			States:           map[State]int{StateFired: 1, StateInvalid: 1, StateWaiting: 1, StateTargetTerminating: 1},
			Requests:         map[string]int{"GET": 12, "PATCH": 3, "DELETE": 1},
			DurationSeconds:  1.25,
			Notifications:    map[string]int{"sent": 2, "failed": 1},
			ListError:        "the server timed out",
			StaleRecords:     2,
			StaleRecordsLeft: 5,
			Reclaimed:        &freed,
			ReclaimUnknown:   1,
			FrozenUntil:      &frozen,
			Stuck:            1,
			MissingTrusted:   []string{"nsman-system"},
		},
	}
	out, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if !readBack.DeepEqualWithNilDifferentFromEmpty(got, rep) {
		again, _ := json.Marshal(got)
		t.Errorf("read back another report:\n got %s\nwant %s", again, out)
	}
}

func TestReportFailed(t *testing.T) {
	for _, tt := range []struct {
		name    string
		summary Summary
		want    bool
	}{
		{name: "a manager failed", summary: Summary{States: map[State]int{StateFailed: 1, StateFired: 2}}, want: true},
		{name: "the listing failed", summary: Summary{States: map[State]int{StateFired: 2}, ListError: "the server timed out"}, want: true},
		{name: "both", summary: Summary{States: map[State]int{StateFailed: 3}, ListError: "the server timed out"}, want: true},
		{name: "neither", summary: Summary{States: map[State]int{StateFired: 2, StateDeferred: 1, StateBusy: 1}}},
		{name: "a failed count of zero", summary: Summary{States: map[State]int{StateFailed: 0}}},
		{name: "no counts at all", summary: Summary{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Report{Summary: tt.summary}).Failed(); got != tt.want {
				t.Errorf("Failed() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestResultOf: only a state in which an action was tried, or would be, has
// a result; nsman_actions_total and a manager's LastAction count no other.
func TestResultOf(t *testing.T) {
	want := map[State]string{
		StateDeactivated:       "",
		StateInvalid:           "",
		StateForbidden:         "",
		StateTargetMissing:     "",
		StateTargetTerminating: "",
		StateWaiting:           "",
		StatePlanned:           "planned",
		StateFired:             ResultSucceeded,
		StateFailed:            ResultFailed,
		StateDeferred:          "deferred",
		StateBusy:              "",
		StateDone:              "",
		StateGoverned:          "",
		StateAsleep:            "",
		"":                     "",
		"no-such-state":        "",
	}
	for s, w := range want {
		if got := ResultOf(s); got != w {
			t.Errorf("ResultOf(%q) = %q, want %q", s, got, w)
		}
	}
	// A State added later must be placed here, as having a result or not.
	for _, s := range declaredStates(t) {
		if _, ok := want[s]; !ok {
			t.Errorf("ResultOf: state %q is not in this test's table", s)
		}
	}
}

// declaredStates reads report.go for the values of its State constants.
func declaredStates(t *testing.T) []State {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "report.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var states []State
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if typ, ok := vs.Type.(*ast.Ident); !ok || typ.Name != "State" {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok {
					t.Fatalf("a State constant that is not a literal: %#v", v)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				states = append(states, State(s))
			}
		}
	}
	if len(states) == 0 {
		t.Fatal("no State constant found in report.go")
	}
	return states
}

// reclaimed builds a Reclaimed from quantities as a manifest writes them.
func reclaimed(cpu, memory, storage string, loadBalancers int) Reclaimed {
	return Reclaimed{CPU: resource.MustParse(cpu), Memory: resource.MustParse(memory),
		Storage: resource.MustParse(storage), LoadBalancers: loadBalancers}
}

// TestReclaimedAdd: a summary sums what each entry frees, whatever suffix
// each pod or claim wrote its requests in.
func TestReclaimedAdd(t *testing.T) {
	for _, tt := range []struct {
		name     string
		to, add  Reclaimed
		want     Reclaimed
		wantText string
	}{
		{name: "milli-CPUs make a whole", to: reclaimed("1500m", "0", "0", 0), add: reclaimed("500m", "0", "0", 0),
			want: reclaimed("2", "0", "0", 0), wantText: "cpu 2, memory 0, storage 0, 0 load balancer(s)"},
		{name: "a whole and milli-CPUs", to: reclaimed("1", "0", "0", 0), add: reclaimed("250m", "0", "0", 0),
			want: reclaimed("1250m", "0", "0", 0), wantText: "cpu 1250m, memory 0, storage 0, 0 load balancer(s)"},
		{name: "Gi and Mi", to: reclaimed("0", "1Gi", "0", 0), add: reclaimed("0", "512Mi", "0", 0),
			want: reclaimed("0", "1536Mi", "0", 0), wantText: "cpu 0, memory 1536Mi, storage 0, 0 load balancer(s)"},
		{name: "binary and decimal", to: reclaimed("0", "1Gi", "1G", 0), add: reclaimed("0", "1G", "1Gi", 0),
			want: reclaimed("0", "2073741824", "2073741824", 0), wantText: "cpu 0, memory 2073741824, storage 2073741824, 0 load balancer(s)"},
		{name: "every field", to: reclaimed("100m", "256Mi", "10Gi", 1), add: reclaimed("1", "768Mi", "5Gi", 2),
			want: reclaimed("1100m", "1Gi", "15Gi", 3), wantText: "cpu 1100m, memory 1Gi, storage 15Gi, 3 load balancer(s)"},
		{name: "to nothing", add: reclaimed("2", "4Gi", "20Gi", 1),
			want: reclaimed("2", "4Gi", "20Gi", 1), wantText: "cpu 2, memory 4Gi, storage 20Gi, 1 load balancer(s)"},
		{name: "nothing added", to: reclaimed("2", "4Gi", "20Gi", 1),
			want: reclaimed("2", "4Gi", "20Gi", 1), wantText: "cpu 2, memory 4Gi, storage 20Gi, 1 load balancer(s)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.to
			got.Add(tt.add)
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("%v + %v = %v, want %v", tt.to, tt.add, got, tt.want)
			}
			if s := got.String(); s != tt.wantText {
				t.Errorf("the sum reads %q, want %q", s, tt.wantText)
			}
		})
	}
}

// TestReclaimedIsZero: a summary leaves Reclaimed out when nothing is freed,
// and must not when a single thing is.
func TestReclaimedIsZero(t *testing.T) {
	for _, tt := range []struct {
		name string
		r    Reclaimed
		want bool
	}{
		{name: "the zero value", r: Reclaimed{}, want: true},
		{name: "zeros as written", r: reclaimed("0m", "0Mi", "0Gi", 0), want: true},
		{name: "only a load balancer", r: Reclaimed{LoadBalancers: 1}},
		{name: "only storage", r: Reclaimed{Storage: resource.MustParse("1Gi")}},
		{name: "only memory", r: Reclaimed{Memory: resource.MustParse("1Mi")}},
		{name: "only CPU", r: Reclaimed{CPU: resource.MustParse("1m")}},
		{name: "everything", r: reclaimed("1", "1Gi", "1Gi", 1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.IsZero(); got != tt.want {
				t.Errorf("IsZero() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReclaimedString: the text report and Events print this form.
func TestReclaimedString(t *testing.T) {
	for _, tt := range []struct {
		name string
		r    Reclaimed
		want string
	}{
		{name: "nothing", r: Reclaimed{}, want: "cpu 0, memory 0, storage 0, 0 load balancer(s)"},
		{name: "as documented", r: reclaimed("1500m", "2Gi", "10Gi", 1), want: "cpu 1500m, memory 2Gi, storage 10Gi, 1 load balancer(s)"},
		{name: "decimal suffixes", r: reclaimed("3", "500M", "1T", 4), want: "cpu 3, memory 500M, storage 1T, 4 load balancer(s)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStuckCause: the cause is the reasons in the order found, without their
// messages, which change from one sweep to the next while the cause holds.
func TestStuckCause(t *testing.T) {
	since := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name  string
		stuck *Stuck
		want  string
	}{
		{name: "not stuck", stuck: nil, want: ""},
		{name: "no reason", stuck: &Stuck{Since: since}, want: ""},
		{name: "one reason", stuck: &Stuck{Since: since, Reasons: []StuckReason{
			{Reason: StuckNamespaceFinalizers, Message: "kubernetes"}}}, want: "NamespaceFinalizers"},
		{name: "reasons in order, not sorted", stuck: &Stuck{Since: since, Reasons: []StuckReason{
			{Reason: StuckDiscoveryFailure, Message: "metrics.k8s.io/v1beta1: the server is currently unable to handle the request"},
			{Reason: StuckContentRemaining, Message: "widgets.example.com has 1 resource instances"},
			{Reason: StuckNamespaceFinalizers, Message: "kubernetes"},
		}}, want: "DiscoveryFailure,ContentRemaining,NamespaceFinalizers"},
		{name: "a reason without a message", stuck: &Stuck{Reasons: []StuckReason{{Reason: StuckContentFailure}}}, want: "ContentFailure"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.stuck.Cause(); got != tt.want {
				t.Errorf("Cause() = %q, want %q", got, tt.want)
			}
		})
	}
	// Messages name counts and finalizers a tenant may change at every
	// sweep; the cause, which decides whether to write again, must not.
	was := &Stuck{Since: since, Reasons: []StuckReason{{Reason: StuckFinalizersRemaining, Message: "example.com/hold in 3 resource instances"}}}
	now := &Stuck{Since: since, Reasons: []StuckReason{{Reason: StuckFinalizersRemaining, Message: "example.com/renamed in 1 resource instances"}}}
	if was.Cause() != now.Cause() {
		t.Errorf("other messages, the same reason: causes %q and %q", was.Cause(), now.Cause())
	}
}

// TestStatesListsEveryState: States, what --state may name, holds every
// State constant, in their order.
func TestStatesListsEveryState(t *testing.T) {
	if declared := declaredStates(t); !slices.Equal(States, declared) {
		t.Errorf("States = %v, want the constants of report.go: %v", States, declared)
	}
}
