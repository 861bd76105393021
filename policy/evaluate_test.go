package policy

import (
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"
)

// created is the target namespace's creationTimestamp in every case.
var created = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

// at is a time relative to the target's creation.
func at(d time.Duration) time.Time { return created.Add(d) }

// generation is the generation of the managers built by mgr.
const generation = 7

func mgr(policies ...Policy) Manager {
	return Manager{
		Namespace: "example-01", Name: "example-01", UID: "uid-1", Generation: generation,
		Policies: policies,
	}
}

func ttl(name string, d time.Duration) Policy {
	return Policy{
		Name:      name,
		Condition: Condition{Type: ConditionTTL, TTL: d},
		Action:    Action{Type: ActionDelete},
	}
}

// pods builds a PODS_SUCCEED policy with the defaults: checks after 60 s,
// every 10 s, one success is enough.
func pods(name string, mutators ...func(*Condition)) Policy {
	p := Policy{
		Name: name,
		Condition: Condition{
			Type:         ConditionPodsSucceed,
			InitialDelay: DefaultInitialDelay,
			Period:       DefaultPeriod,
			MinChecks:    DefaultMinChecks,
			PodLabels:    map[string]string{"component": "main"},
		},
		Action: Action{Type: ActionDelete},
	}
	for _, mutate := range mutators {
		mutate(&p.Condition)
	}
	return p
}

func minChecks(n int) func(*Condition) { return func(c *Condition) { c.MinChecks = n } }

func noPodLabels(c *Condition) { c.PodLabels = nil }

func input(now time.Time, mutators ...func(*Input)) Input {
	in := Input{Now: now, TargetCreated: created}
	for _, mutate := range mutators {
		mutate(&in)
	}
	return in
}

// podsResult records the pods check of policy i.
func podsResult(i, notSucceeded int) func(*Input) {
	return func(in *Input) {
		if in.Pods == nil {
			in.Pods = map[int]PodsCheck{}
		}
		in.Pods[i] = PodsCheck{NotSucceeded: notSucceeded}
		if notSucceeded > 0 {
			in.Pods[i] = PodsCheck{NotSucceeded: notSucceeded, Example: "test-1 (Failed)"}
		}
	}
}

func withChecks(checks map[string]CheckState) func(*Input) {
	return func(in *Input) { in.Checks = checks }
}

// progress is a CheckState of the current generation.
func progress(passed int, last time.Time) CheckState {
	return CheckState{Generation: generation, Passed: passed, Last: last}
}

func waiting(name string, due time.Time) PolicyState { return PolicyState{Name: name, Due: due} }
func holding(name string) PolicyState                { return PolicyState{Name: name, Holds: true} }

// comparableOutcome drops the prose (Reason, Detail), checked apart by
// checkProse, and the difference between a nil and an empty Checks map.
func comparableOutcome(out Outcome) Outcome {
	out.Reason = ""
	out.Policies = append([]PolicyState(nil), out.Policies...)
	for i := range out.Policies {
		out.Policies[i].Detail = ""
	}
	if len(out.Checks) == 0 {
		out.Checks = nil
	}
	return out
}

// checkProse fails t unless every evaluated policy says why it holds or what
// it waits for, and a firing policy's reason is what it said.
func checkProse(t *testing.T, out Outcome) {
	t.Helper()
	for i, s := range out.Policies {
		if s.Detail == "" {
			t.Errorf("Policies[%d].Detail is empty", i)
		}
	}
	switch out.Verdict {
	case Fire:
		if n := len(out.Policies); n == 0 || out.Reason != out.Policies[n-1].Detail {
			t.Errorf("Reason = %q, want the firing policy's detail (policies %+v)", out.Reason, out.Policies)
		}
	default:
		if out.Reason != "" {
			t.Errorf("Reason = %q for verdict %s, want none", out.Reason, out.Verdict)
		}
	}
}

func TestEvaluate(t *testing.T) {
	const (
		a = "delete when pods succeed"
		b = "delete after a day"
	)
	tests := []struct {
		name string
		m    Manager
		in   Input
		want Outcome
	}{
		// TTL.
		{
			name: "TTL fires exactly at created+TTL",
			m:    mgr(ttl(b, 40*time.Second)),
			in:   input(at(40 * time.Second)),
			want: Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{holding(b)}},
		},
		{
			name: "TTL fires after created+TTL",
			m:    mgr(ttl(b, 40*time.Second)),
			in:   input(at(72 * time.Hour)),
			want: Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{holding(b)}},
		},
		{
			name: "TTL waits one nanosecond before created+TTL",
			m:    mgr(ttl(b, 40*time.Second)),
			in:   input(at(40*time.Second - time.Nanosecond)),
			want: Outcome{Verdict: Wait, NextDue: at(40 * time.Second), Policies: []PolicyState{waiting(b, at(40*time.Second))}},
		},
		{
			name: "TTL waits one second before created+TTL",
			m:    mgr(ttl(b, 40*time.Second)),
			in:   input(at(39 * time.Second)),
			want: Outcome{Verdict: Wait, NextDue: at(40 * time.Second), Policies: []PolicyState{waiting(b, at(40*time.Second))}},
		},
		{
			name: "TTL 0 fires at creation",
			m:    mgr(ttl(b, 0)),
			in:   input(created),
			want: Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{holding(b)}},
		},
		{
			name: "TTL waits while now is before the creation (clock skew)",
			m:    mgr(ttl(b, 0)),
			in:   input(at(-time.Second)),
			want: Outcome{Verdict: Wait, NextDue: created, Policies: []PolicyState{waiting(b, created)}},
		},
		{
			name: "default TTL",
			m:    mgr(ttl(b, DefaultTTL)),
			in:   input(at(29 * time.Minute)),
			want: Outcome{Verdict: Wait, NextDue: at(30 * time.Minute), Policies: []PolicyState{waiting(b, at(30*time.Minute))}},
		},
		{
			name: "the largest TTL",
			m:    mgr(ttl(b, MaxSeconds*time.Second)),
			in:   input(at(24 * time.Hour)),
			want: Outcome{Verdict: Wait, NextDue: at(MaxSeconds * time.Second), Policies: []PolicyState{waiting(b, at(MaxSeconds*time.Second))}},
		},

		// PODS_SUCCEED with minChecks 1.
		{
			name: "before the initial delay: wait, no pods asked",
			m:    mgr(pods(a)),
			in:   input(at(59 * time.Second)),
			want: Outcome{Verdict: Wait, NextDue: at(time.Minute), Policies: []PolicyState{waiting(a, at(time.Minute))}},
		},
		{
			name: "one nanosecond before the initial delay",
			m:    mgr(pods(a)),
			in:   input(at(time.Minute - time.Nanosecond)),
			want: Outcome{Verdict: Wait, NextDue: at(time.Minute), Policies: []PolicyState{waiting(a, at(time.Minute))}},
		},
		{
			name: "before the initial delay, pods results are not looked at",
			m:    mgr(pods(a)),
			in:   input(at(30*time.Second), podsResult(0, 0)),
			want: Outcome{Verdict: Wait, NextDue: at(time.Minute), Policies: []PolicyState{waiting(a, at(time.Minute))}},
		},
		{
			name: "exactly at the initial delay: need pods",
			m:    mgr(pods(a)),
			in:   input(at(time.Minute)),
			want: Outcome{Verdict: NeedPods, Policy: 0},
		},
		{
			name: "initial delay 0: need pods at creation",
			m:    mgr(pods(a, func(c *Condition) { c.InitialDelay = 0 })),
			in:   input(created),
			want: Outcome{Verdict: NeedPods, Policy: 0},
		},
		{
			name: "no pod other than Succeeded: fire",
			m:    mgr(pods(a)),
			in:   input(at(time.Minute), podsResult(0, 0)),
			want: Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{holding(a)}},
		},
		{
			name: "empty podLabels and no pod other than Succeeded: fire",
			m:    mgr(pods(a, noPodLabels)),
			in:   input(at(time.Hour), podsResult(0, 0)),
			want: Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{holding(a)}},
		},
		{
			name: "a Failed pod: wait for pods alone",
			m:    mgr(pods(a)),
			in:   input(at(time.Minute), podsResult(0, 1)),
			want: Outcome{Verdict: Wait, Policies: []PolicyState{{Name: a}}},
		},
		{
			name: "empty podLabels and running pods: wait",
			m:    mgr(pods(a, noPodLabels)),
			in:   input(at(time.Minute), podsResult(0, 3)),
			want: Outcome{Verdict: Wait, Policies: []PolicyState{{Name: a}}},
		},
		{
			name: "a pods result for another policy does not count",
			m:    mgr(ttl(b, time.Hour), pods(a)),
			in:   input(at(time.Minute), podsResult(0, 0)),
			want: Outcome{Verdict: NeedPods, Policy: 1, NextDue: at(time.Hour), Policies: []PolicyState{waiting(b, at(time.Hour))}},
		},

		// Order.
		{
			name: "two policies hold: the first fires",
			m:    mgr(ttl(b, time.Minute), ttl("delete after two minutes", 2*time.Minute)),
			in:   input(at(time.Hour)),
			want: Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{holding(b)}},
		},
		{
			name: "pods and TTL hold: the first fires and the TTL is not evaluated",
			m:    mgr(pods(a), ttl(b, time.Minute)),
			in:   input(at(time.Hour), podsResult(0, 0)),
			want: Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{holding(a)}},
		},
		{
			name: "TTL holds before pods were checked: TTL fires first",
			m:    mgr(ttl(b, time.Minute), pods(a)),
			in:   input(at(time.Hour)),
			want: Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{holding(b)}},
		},
		{
			name: "first waits, second holds",
			m:    mgr(ttl(b, 2*time.Hour), ttl("delete after an hour", time.Hour)),
			in:   input(at(time.Hour)),
			want: Outcome{Verdict: Fire, Policy: 1, Policies: []PolicyState{waiting(b, at(2*time.Hour)), holding("delete after an hour")}},
		},
		{
			name: "a later TTL fires when earlier pods are pending",
			m:    mgr(pods(a), ttl(b, 24*time.Hour)),
			in:   input(at(25*time.Hour), podsResult(0, 2)),
			want: Outcome{Verdict: Fire, Policy: 1, Policies: []PolicyState{{Name: a}, holding(b)}},
		},
		{
			name: "pods pending and TTL not yet due: wait until the TTL",
			m:    mgr(pods(a), ttl(b, 24*time.Hour)),
			in:   input(at(time.Hour), podsResult(0, 2)),
			want: Outcome{Verdict: Wait, NextDue: at(24 * time.Hour), Policies: []PolicyState{{Name: a}, waiting(b, at(24*time.Hour))}},
		},
		{
			name: "a waiting TTL, then pods to check",
			m:    mgr(ttl(b, 24*time.Hour), pods(a)),
			in:   input(at(time.Hour)),
			want: Outcome{Verdict: NeedPods, Policy: 1, NextDue: at(24 * time.Hour), Policies: []PolicyState{waiting(b, at(24*time.Hour))}},
		},
		{
			name: "the second of two pods policies needs pods once the first is checked",
			m:    mgr(pods(a), pods("scale down when pods succeed", noPodLabels)),
			in:   input(at(time.Hour), podsResult(0, 1)),
			want: Outcome{Verdict: NeedPods, Policy: 1, Policies: []PolicyState{{Name: a}}},
		},
		{
			name: "next due is the earliest of the waiting policies",
			m:    mgr(ttl(b, time.Hour), pods(a, func(c *Condition) { c.InitialDelay = 5 * time.Minute }), ttl("delete after a minute", 2*time.Minute)),
			in:   input(at(time.Minute)),
			want: Outcome{
				Verdict: Wait,
				NextDue: at(2 * time.Minute),
				Policies: []PolicyState{
					waiting(b, at(time.Hour)),
					waiting(a, at(5*time.Minute)),
					waiting("delete after a minute", at(2*time.Minute)),
				},
			},
		},
		{
			name: "three policies, the last fires",
			m:    mgr(ttl(b, time.Hour), pods(a), ttl("delete after a minute", time.Minute)),
			in:   input(at(time.Minute), podsResult(1, 4)),
			want: Outcome{
				Verdict:  Fire,
				Policy:   2,
				Policies: []PolicyState{waiting(b, at(time.Hour)), {Name: a}, holding("delete after a minute")},
			},
		},
		{
			name: "no policies: wait forever",
			m:    mgr(),
			in:   input(at(time.Hour)),
			want: Outcome{Verdict: Wait},
		},

		// minChecks.
		{
			name: "minChecks 3, first success: record it and wait a period",
			m:    mgr(pods(a, minChecks(3))),
			in:   input(at(time.Minute), podsResult(0, 0)),
			want: Outcome{
				Verdict:  Wait,
				NextDue:  at(time.Minute + 10*time.Second),
				Policies: []PolicyState{waiting(a, at(time.Minute+10*time.Second))},
				Checks:   map[string]CheckState{a: progress(1, at(time.Minute))},
			},
		},
		{
			name: "minChecks 3, before last+period: no pods asked",
			m:    mgr(pods(a, minChecks(3))),
			in:   input(at(time.Minute+9*time.Second), withChecks(map[string]CheckState{a: progress(1, at(time.Minute))})),
			want: Outcome{
				Verdict:  Wait,
				NextDue:  at(time.Minute + 10*time.Second),
				Policies: []PolicyState{waiting(a, at(time.Minute+10*time.Second))},
				Checks:   map[string]CheckState{a: progress(1, at(time.Minute))},
			},
		},
		{
			name: "minChecks 3, one nanosecond before last+period",
			m:    mgr(pods(a, minChecks(3))),
			in:   input(at(time.Minute+10*time.Second-time.Nanosecond), withChecks(map[string]CheckState{a: progress(1, at(time.Minute))})),
			want: Outcome{
				Verdict:  Wait,
				NextDue:  at(time.Minute + 10*time.Second),
				Policies: []PolicyState{waiting(a, at(time.Minute+10*time.Second))},
				Checks:   map[string]CheckState{a: progress(1, at(time.Minute))},
			},
		},
		{
			name: "minChecks 3, at last+period: need pods",
			m:    mgr(pods(a, minChecks(3))),
			in:   input(at(time.Minute+10*time.Second), withChecks(map[string]CheckState{a: progress(1, at(time.Minute))})),
			want: Outcome{
				Verdict: NeedPods,
				Policy:  0,
				Checks:  map[string]CheckState{a: progress(1, at(time.Minute))},
			},
		},
		{
			name: "minChecks 3, second success",
			m:    mgr(pods(a, minChecks(3))),
			in: input(at(time.Minute+10*time.Second), podsResult(0, 0),
				withChecks(map[string]CheckState{a: progress(1, at(time.Minute))})),
			want: Outcome{
				Verdict:  Wait,
				NextDue:  at(time.Minute + 20*time.Second),
				Policies: []PolicyState{waiting(a, at(time.Minute+20*time.Second))},
				Checks:   map[string]CheckState{a: progress(2, at(time.Minute+10*time.Second))},
			},
		},
		{
			name: "minChecks 3, second success long after the period still counts",
			m:    mgr(pods(a, minChecks(3))),
			in: input(at(time.Hour), podsResult(0, 0),
				withChecks(map[string]CheckState{a: progress(1, at(time.Minute))})),
			want: Outcome{
				Verdict:  Wait,
				NextDue:  at(time.Hour + 10*time.Second),
				Policies: []PolicyState{waiting(a, at(time.Hour+10*time.Second))},
				Checks:   map[string]CheckState{a: progress(2, at(time.Hour))},
			},
		},
		{
			name: "minChecks 3, third success: fire",
			m:    mgr(pods(a, minChecks(3))),
			in: input(at(time.Minute+20*time.Second), podsResult(0, 0),
				withChecks(map[string]CheckState{a: progress(2, at(time.Minute+10*time.Second))})),
			want: Outcome{
				Verdict:  Fire,
				Policy:   0,
				Policies: []PolicyState{holding(a)},
				Checks:   map[string]CheckState{a: progress(2, at(time.Minute+10*time.Second))},
			},
		},
		{
			name: "minChecks 3, a failure after two successes starts over",
			m:    mgr(pods(a, minChecks(3))),
			in: input(at(time.Minute+20*time.Second), podsResult(0, 1),
				withChecks(map[string]CheckState{a: progress(2, at(time.Minute+10*time.Second))})),
			want: Outcome{Verdict: Wait, Policies: []PolicyState{{Name: a}}},
		},
		{
			name: "a failure removes only its own policy's progress",
			m:    mgr(pods(a, minChecks(3)), pods("other", minChecks(2))),
			in: input(at(time.Hour), podsResult(0, 1), withChecks(map[string]CheckState{
				a:       progress(1, at(time.Minute)),
				"other": progress(1, at(time.Hour)),
			})),
			want: Outcome{
				Verdict:  Wait,
				NextDue:  at(time.Hour + 10*time.Second),
				Policies: []PolicyState{{Name: a}, waiting("other", at(time.Hour+10*time.Second))},
				Checks:   map[string]CheckState{"other": progress(1, at(time.Hour))},
			},
		},
		{
			name: "progress of another generation is ignored: pods are asked at once",
			m:    mgr(pods(a, minChecks(3))),
			in: input(at(time.Minute+time.Second), withChecks(map[string]CheckState{
				a: {Generation: generation - 1, Passed: 2, Last: at(time.Minute)},
			})),
			want: Outcome{
				Verdict: NeedPods,
				Policy:  0,
				Checks:  map[string]CheckState{a: {Generation: generation - 1, Passed: 2, Last: at(time.Minute)}},
			},
		},
		{
			name: "progress of another generation is ignored: counting starts at 1",
			m:    mgr(pods(a, minChecks(3))),
			in: input(at(time.Minute+time.Second), podsResult(0, 0), withChecks(map[string]CheckState{
				a: {Generation: generation - 1, Passed: 2, Last: at(time.Minute)},
			})),
			want: Outcome{
				Verdict:  Wait,
				NextDue:  at(time.Minute + 11*time.Second),
				Policies: []PolicyState{waiting(a, at(time.Minute+11*time.Second))},
				Checks:   map[string]CheckState{a: progress(1, at(time.Minute+time.Second))},
			},
		},
		{
			name: "progress of a later generation is ignored too",
			m:    mgr(pods(a, minChecks(2))),
			in: input(at(time.Hour), podsResult(0, 0), withChecks(map[string]CheckState{
				a: {Generation: generation + 1, Passed: 1, Last: at(time.Hour - time.Minute)},
			})),
			want: Outcome{
				Verdict:  Wait,
				NextDue:  at(time.Hour + 10*time.Second),
				Policies: []PolicyState{waiting(a, at(time.Hour+10*time.Second))},
				Checks:   map[string]CheckState{a: progress(1, at(time.Hour))},
			},
		},
		{
			name: "progress of another policy name is kept and not used",
			m:    mgr(pods(a, minChecks(2))),
			in: input(at(time.Hour), podsResult(0, 0), withChecks(map[string]CheckState{
				"renamed": progress(1, at(time.Hour-time.Minute)),
			})),
			want: Outcome{
				Verdict:  Wait,
				NextDue:  at(time.Hour + 10*time.Second),
				Policies: []PolicyState{waiting(a, at(time.Hour+10*time.Second))},
				Checks: map[string]CheckState{
					"renamed": progress(1, at(time.Hour-time.Minute)),
					a:         progress(1, at(time.Hour)),
				},
			},
		},
		{
			name: "minChecks 1 fires on the first success whatever the progress",
			m:    mgr(pods(a)),
			in: input(at(time.Minute), podsResult(0, 0), withChecks(map[string]CheckState{
				a: {Generation: generation - 1, Passed: 1, Last: at(time.Minute - time.Second)},
			})),
			want: Outcome{
				Verdict:  Fire,
				Policy:   0,
				Policies: []PolicyState{holding(a)},
				Checks:   map[string]CheckState{a: {Generation: generation - 1, Passed: 1, Last: at(time.Minute - time.Second)}},
			},
		},
		{
			name: "minChecks 2 waits its period, a later TTL still fires",
			m:    mgr(pods(a, minChecks(2)), ttl(b, time.Hour)),
			in:   input(at(time.Hour), withChecks(map[string]CheckState{a: progress(1, at(time.Hour-time.Second))})),
			want: Outcome{
				Verdict:  Fire,
				Policy:   1,
				Policies: []PolicyState{waiting(a, at(time.Hour+9*time.Second)), holding(b)},
				Checks:   map[string]CheckState{a: progress(1, at(time.Hour-time.Second))},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Evaluate(tt.m, tt.in)
			if !reflect.DeepEqual(comparableOutcome(got), comparableOutcome(tt.want)) {
				t.Errorf("Evaluate() =\n%+v\nwant\n%+v", comparableOutcome(got), comparableOutcome(tt.want))
			}
			checkProse(t, got)
		})
	}
}

// TestEvaluateChecksUnchanged pins down that an evaluation that changes no
// progress returns Input.Checks as it came, nil or not, so that the sweep
// writes nothing.
func TestEvaluateChecksUnchanged(t *testing.T) {
	const a = "delete when pods succeed"
	tests := []struct {
		name string
		m    Manager
		in   Input
	}{
		{name: "TTL waits, no progress", m: mgr(ttl("ttl", time.Hour)), in: input(at(time.Minute))},
		{name: "TTL waits, empty progress", m: mgr(ttl("ttl", time.Hour)), in: input(at(time.Minute), withChecks(map[string]CheckState{}))},
		{name: "TTL fires", m: mgr(ttl("ttl", time.Hour)), in: input(at(time.Hour))},
		{name: "before the initial delay", m: mgr(pods(a, minChecks(3))), in: input(at(time.Second))},
		{name: "need pods", m: mgr(pods(a, minChecks(3))), in: input(at(time.Minute))},
		{name: "pods pending without progress", m: mgr(pods(a, minChecks(3))), in: input(at(time.Minute), podsResult(0, 1))},
		{name: "pods pending without progress, empty map", m: mgr(pods(a, minChecks(3))), in: input(at(time.Minute), podsResult(0, 1), withChecks(map[string]CheckState{}))},
		{name: "minChecks 1 success", m: mgr(pods(a)), in: input(at(time.Minute), podsResult(0, 0))},
		{
			name: "within the period",
			m:    mgr(pods(a, minChecks(3))),
			in:   input(at(time.Minute+5*time.Second), withChecks(map[string]CheckState{a: progress(1, at(time.Minute))})),
		},
		{
			name: "within the period, other progress kept",
			m:    mgr(pods(a, minChecks(3)), ttl("ttl", time.Hour)),
			in: input(at(time.Minute+5*time.Second), withChecks(map[string]CheckState{
				a:      progress(2, at(time.Minute)),
				"gone": progress(1, at(0)),
			})),
		},
		{
			name: "firing after enough checks",
			m:    mgr(pods(a, minChecks(2))),
			in:   input(at(time.Hour), podsResult(0, 0), withChecks(map[string]CheckState{a: progress(1, at(time.Minute))})),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := maps.Clone(tt.in.Checks)
			got := Evaluate(tt.m, tt.in)
			if !reflect.DeepEqual(got.Checks, tt.in.Checks) {
				t.Errorf("Checks = %#v, want the input %#v", got.Checks, tt.in.Checks)
			}
			if !reflect.DeepEqual(tt.in.Checks, before) {
				t.Errorf("Evaluate changed Input.Checks to %#v, was %#v", tt.in.Checks, before)
			}
		})
	}
}

// TestEvaluateDoesNotAliasChecks guards the sweep's copy of the persisted
// progress: Evaluate returns a new map when progress changes.
func TestEvaluateDoesNotAliasChecks(t *testing.T) {
	const a = "delete when pods succeed"
	tests := []struct {
		name string
		m    Manager
		in   Input
	}{
		{
			name: "a success is recorded",
			m:    mgr(pods(a, minChecks(3))),
			in:   input(at(time.Hour), podsResult(0, 0), withChecks(map[string]CheckState{a: progress(1, at(time.Minute))})),
		},
		{
			name: "a failure resets",
			m:    mgr(pods(a, minChecks(3))),
			in:   input(at(time.Hour), podsResult(0, 1), withChecks(map[string]CheckState{a: progress(1, at(time.Minute))})),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := maps.Clone(tt.in.Checks)
			got := Evaluate(tt.m, tt.in)
			if !reflect.DeepEqual(tt.in.Checks, before) {
				t.Errorf("Evaluate changed Input.Checks to %#v, was %#v", tt.in.Checks, before)
			}
			if reflect.DeepEqual(got.Checks, before) {
				t.Errorf("Checks = %#v, want a change", got.Checks)
			}
		})
	}
}

// sweep evaluates m the way a sweep does: it answers every NeedPods with the
// policy's entry in results and evaluates again.
func sweep(t *testing.T, m Manager, in Input, results map[int]PodsCheck) Outcome {
	t.Helper()
	in.Pods = map[int]PodsCheck{}
	for range len(m.Policies) + 1 {
		out := Evaluate(m, in)
		if out.Verdict != NeedPods {
			return out
		}
		if _, asked := in.Pods[out.Policy]; asked {
			t.Fatalf("NeedPods for policy %d, whose pods were already checked", out.Policy)
		}
		r, ok := results[out.Policy]
		if !ok {
			t.Fatalf("NeedPods for policy %d at %s, whose pods the test did not expect to be checked", out.Policy, in.Now)
		}
		in.Pods[out.Policy] = r
	}
	t.Fatalf("Evaluate asked for pods more often than there are policies")
	return Outcome{}
}

// TestEvaluateAcrossSweeps runs a manager through consecutive sweeps,
// persisting Checks from one to the next as the sweep does.
func TestEvaluateAcrossSweeps(t *testing.T) {
	const a = "delete when pods succeed"
	type step struct {
		at time.Duration // since the target's creation
		// notSucceeded is the pods check's result, -1 when the step must
		// not check pods.
		notSucceeded int
		want         Verdict
		wantPassed   int // Checks[a].Passed after the step, 0 when absent
		wantNextDue  time.Duration
	}
	tests := []struct {
		name  string
		m     Manager
		steps []step
	}{
		{
			name: "minChecks 3 with a sweep every 4 seconds",
			m:    mgr(pods(a, minChecks(3))),
			steps: []step{
				{at: 30 * time.Second, notSucceeded: -1, want: Wait, wantNextDue: time.Minute},
				{at: 60 * time.Second, notSucceeded: 0, want: Wait, wantPassed: 1, wantNextDue: 70 * time.Second},
				{at: 64 * time.Second, notSucceeded: -1, want: Wait, wantPassed: 1, wantNextDue: 70 * time.Second},
				{at: 68 * time.Second, notSucceeded: -1, want: Wait, wantPassed: 1, wantNextDue: 70 * time.Second},
				{at: 72 * time.Second, notSucceeded: 0, want: Wait, wantPassed: 2, wantNextDue: 82 * time.Second},
				{at: 76 * time.Second, notSucceeded: -1, want: Wait, wantPassed: 2, wantNextDue: 82 * time.Second},
				{at: 84 * time.Second, notSucceeded: 0, want: Fire, wantPassed: 2},
			},
		},
		{
			name: "minChecks 2 reset by a failure",
			m:    mgr(pods(a, minChecks(2))),
			steps: []step{
				{at: 60 * time.Second, notSucceeded: 0, want: Wait, wantPassed: 1, wantNextDue: 70 * time.Second},
				{at: 70 * time.Second, notSucceeded: 1, want: Wait},
				{at: 75 * time.Second, notSucceeded: 0, want: Wait, wantPassed: 1, wantNextDue: 85 * time.Second},
				{at: 80 * time.Second, notSucceeded: -1, want: Wait, wantPassed: 1, wantNextDue: 85 * time.Second},
				{at: 85 * time.Second, notSucceeded: 0, want: Fire, wantPassed: 1},
			},
		},
		{
			name: "minChecks 1 failing until the pods succeed",
			m:    mgr(pods(a, noPodLabels)),
			steps: []step{
				{at: 60 * time.Second, notSucceeded: 2, want: Wait},
				{at: 61 * time.Second, notSucceeded: 1, want: Wait},
				{at: 62 * time.Second, notSucceeded: 0, want: Fire},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var checks map[string]CheckState
			for _, s := range tt.steps {
				results := map[int]PodsCheck{}
				if s.notSucceeded >= 0 {
					results[0] = PodsCheck{NotSucceeded: s.notSucceeded}
				}
				out := sweep(t, tt.m, input(at(s.at), withChecks(checks)), results)
				var wantNextDue time.Time
				if s.wantNextDue != 0 {
					wantNextDue = at(s.wantNextDue)
				}
				if out.Verdict != s.want || out.Checks[a].Passed != s.wantPassed || !out.NextDue.Equal(wantNextDue) {
					t.Fatalf("at +%s: verdict %s, passed %d, next due %s; want %s, %d, %s",
						s.at, out.Verdict, out.Checks[a].Passed, out.NextDue, s.want, s.wantPassed, wantNextDue)
				}
				checks = out.Checks
			}
		})
	}
}

// TestEvaluateDetail checks what the plan and the status show a user: the
// selector, an example of a pending pod, the progress and the due time.
func TestEvaluateDetail(t *testing.T) {
	const a = "delete when pods succeed"
	tests := []struct {
		name string
		m    Manager
		in   Input
		want []string // substrings of Policies[0].Detail
	}{
		{
			name: "TTL waiting names the due time",
			m:    mgr(ttl("ttl", time.Hour)),
			in:   input(at(time.Minute)),
			want: []string{"2026-03-14T10:26:53Z"},
		},
		{
			name: "initial delay names its end",
			m:    mgr(pods(a)),
			in:   input(at(time.Second)),
			want: []string{"2026-03-14T09:27:53Z"},
		},
		{
			name: "pending pods: selector and example",
			m:    mgr(pods(a)),
			in:   input(at(time.Minute), podsResult(0, 2)),
			want: []string{"component=main", "test-1 (Failed)"},
		},
		{
			name: "succeeded with empty podLabels",
			m:    mgr(pods(a, noPodLabels)),
			in:   input(at(time.Minute), podsResult(0, 0)),
			want: []string{"in the namespace"},
		},
		{
			name: "progress",
			m:    mgr(pods(a, minChecks(3))),
			in:   input(at(time.Minute), podsResult(0, 0)),
			want: []string{"1 of 3", "2026-03-14T09:28:03Z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Evaluate(tt.m, tt.in)
			if len(out.Policies) == 0 {
				t.Fatalf("no policy state in %+v", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.Policies[0].Detail, w) {
					t.Errorf("Detail = %q, want it to contain %q", out.Policies[0].Detail, w)
				}
			}
		})
	}
}

// The details say durations as users write them (1d12h, 3d, 5m), never
// as Go prints them (36h0m0s).
func TestEvaluateDetailSaysDurationsAsWritten(t *testing.T) {
	day := 24 * time.Hour
	gone := map[string]CheckState{"orphan": {Owner: prRef, GoneSince: at(time.Hour)}}
	for _, tt := range []struct {
		name string
		m    Manager
		in   Input
		want string // the start of Policies[0].Detail, or of its Problem
	}{
		{"TTL waits", mgr(ttl("ttl", 36*time.Hour)), input(at(time.Minute)), "TTL 1d12h elapses at 2026-03-15T21:26:53Z"},
		{"TTL fired", mgr(ttl("ttl", 2*time.Hour+30*time.Minute)), input(at(3 * time.Hour)), "TTL 2h30m elapsed at 2026-03-14T11:56:53Z"},
		{"idle waits", mgr(idle("idle", 3*day)), Input{Now: at(4 * day), TargetCreated: created, Activity: &Activity{At: at(3 * day), What: "pod web-1 created"}},
			"last activity: pod web-1 created at 2026-03-17T09:26:53Z; idle 3d at 2026-03-20T09:26:53Z"},
		{"idle fired", mgr(idle("idle", 90*time.Minute)), Input{Now: at(4 * day), TargetCreated: created, Activity: &Activity{At: at(3 * day), What: "pod web-1 created"}},
			"idle 1h30m since 2026-03-17T09:26:53Z"},
		{"grace elapses", mgr(ownerGone("orphan", 2*time.Minute)), Input{Now: at(time.Hour), TargetCreated: created, Owner: owner(OwnerGone), Checks: gone},
			"owner " + prRef + " (argocd.argoproj.io/tracking-id) gone since 2026-03-14T10:26:53Z; grace 2m elapses at"},
		{"touch too far ahead", mgr(idle("idle", day)), Input{Now: at(time.Hour), TargetCreated: created, TargetTouched: at(2 * time.Hour).Format(time.RFC3339)},
			"annotation " + TouchedAnnotation + ": 2026-03-14T11:26:53Z is more than 5m ahead: ignored"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := Evaluate(tt.m, tt.in)
			if len(out.Policies) == 0 {
				t.Fatalf("no policy state in %+v", out)
			}
			if st := out.Policies[0]; !strings.HasPrefix(st.Detail, tt.want) && !strings.HasPrefix(st.Problem, tt.want) {
				t.Errorf("Detail = %q, Problem = %q; want one to start %q", st.Detail, st.Problem, tt.want)
			}
		})
	}
}

func TestVerdictString(t *testing.T) {
	tests := []struct {
		v    Verdict
		want string
	}{
		{Wait, "wait"},
		{Fire, "fire"},
		{NeedPods, "need-pods"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.v.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}
