package policy

import (
	"reflect"
	"testing"
	"time"

	"github.com/nsman/nsman/policy/window"
)

// sleepPolicy builds a SLEEP policy, as Parse makes one: never final.
func sleepPolicy(name string, c Condition, windows ...window.Window) Policy {
	return Policy{Name: name, Condition: c, Action: Action{Type: ActionSleep}, Windows: windows}
}

func asleep(policy string) func(*Input) { return func(in *Input) { in.Asleep = policy } }

func wokenUntil(t time.Time) func(*Input) {
	return func(in *Input) { in.WokenUntil, in.WokenBy = t, "namespace preview" }
}

func activity(at time.Time, what string) func(*Input) {
	return func(in *Input) { in.Activity = &Activity{At: at, What: what} }
}

// sleeping is the state of a SLEEP policy that holds while the target is
// asleep, until due (zero: until activity or pods end it).
func sleeping(name string, due time.Time) PolicyState {
	return PolicyState{Name: name, Holds: true, Due: due}
}

// comparableSleep is comparableOutcome with its times in UTC (a window's
// are in its time zone) and without the IDLE policies' last activity,
// which their Detail says.
func comparableSleep(out Outcome) Outcome {
	out = comparableOutcome(out)
	utc := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return t.UTC()
	}
	out.NextDue = utc(out.NextDue)
	for i := range out.Policies {
		out.Policies[i].Due = utc(out.Policies[i].Due)
		out.Policies[i].LastActivity = nil
	}
	return out
}

// A SLEEP policy says whether the target should be asleep: it puts an
// awake target to sleep while it holds (its condition, and one of its
// windows open), wakes it once no SLEEP policy holds, and else lets the
// walk go on to the policies after it.
func TestEvaluateSleep(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	nightly := window.Window{From: 20 * 60, To: 7 * 60, Location: berlin}
	weekend := window.Window{Days: []time.Weekday{time.Saturday, time.Sunday}, From: 7 * 60, To: 20 * 60, Location: berlin}
	const (
		n    = "nights"
		w    = "weekends"
		i    = "idle an hour"
		d    = "delete after a day"
		gone = "parked"
	)
	nights := sleepPolicy(n, Condition{Type: ConditionTTL}, nightly)
	idleHour := sleepPolicy(i, Condition{Type: ConditionIdle, Idle: time.Hour})
	// Tuesday 2026-11-24 in Berlin (CET, UTC+1): the nights' window
	// opens at 19:00 UTC and closes the next day at 06:00 UTC.
	noon, opens, closes := utc("2026-11-24T12:00:00Z"), utc("2026-11-24T19:00:00Z"), utc("2026-11-25T06:00:00Z")
	reopens := utc("2026-11-25T19:00:00Z")
	in := func(now time.Time, mutators ...func(*Input)) Input {
		return input(now, mutators...)
	}
	tests := []struct {
		name string
		m    Manager
		in   Input
		want Outcome
		// reason, when set, is the Reason in full.
		reason string
	}{
		// One SLEEP policy in windows crossing midnight.
		{
			name: "awake outside its windows: it waits for the opening, not holding",
			m:    mgr(nights),
			in:   in(noon),
			want: Outcome{Verdict: Wait, NextDue: opens, Policies: []PolicyState{waiting(n, opens)}},
		},
		{
			name: "awake one nanosecond before the opening",
			m:    mgr(nights),
			in:   in(opens.Add(-time.Nanosecond)),
			want: Outcome{Verdict: Wait, NextDue: opens, Policies: []PolicyState{waiting(n, opens)}},
		},
		{
			name:   "awake as its window opens: sleep",
			m:      mgr(nights),
			in:     in(opens),
			want:   Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{sleeping(n, closes)}},
			reason: `policy "nights" holds (TTL 0s elapsed at 2026-03-14T09:26:53Z; in its window every day 20:00-07:00 Europe/Berlin until 2026-11-25T06:00:00Z): sleep`,
		},
		{
			name: "awake after midnight in its window: sleep",
			m:    mgr(nights),
			in:   in(utc("2026-11-24T23:30:00Z")),
			want: Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{sleeping(n, closes)}},
		},
		{
			name: "asleep after midnight: it sleeps on until the window closes",
			m:    mgr(nights),
			in:   in(utc("2026-11-24T23:30:00Z"), asleep(n)),
			want: Outcome{Verdict: Wait, NextDue: closes, Policies: []PolicyState{sleeping(n, closes)}},
		},
		{
			name: "asleep one nanosecond before the window closes",
			m:    mgr(nights),
			in:   in(closes.Add(-time.Nanosecond), asleep(n)),
			want: Outcome{Verdict: Wait, NextDue: closes, Policies: []PolicyState{sleeping(n, closes)}},
		},
		{
			name:   "asleep as the window closes: wake",
			m:      mgr(nights),
			in:     in(closes, asleep(n)),
			want:   Outcome{Verdict: Fire, Wake: true, Policy: 0, Policies: []PolicyState{waiting(n, reopens)}},
			reason: `policy "nights" no longer holds (TTL 0s elapsed at 2026-03-14T09:26:53Z; outside its windows (every day 20:00-07:00 Europe/Berlin) until 2026-11-25T19:00:00Z): wake`,
		},
		{
			name:   "asleep in its window, woken on demand: wake",
			m:      mgr(nights),
			in:     in(utc("2026-11-24T23:30:00Z"), asleep(n), wokenUntil(utc("2026-11-25T01:00:00Z"))),
			want:   Outcome{Verdict: Fire, Wake: true, Policy: 0, Policies: []PolicyState{waiting(n, utc("2026-11-25T01:00:00Z"))}},
			reason: `policy "nights" no longer holds (TTL 0s elapsed at 2026-03-14T09:26:53Z; in its window every day 20:00-07:00 Europe/Berlin until 2026-11-25T06:00:00Z; woken until 2026-11-25T01:00:00Z by namespace preview (nsman.k8s.consol.de/wake-until)): wake`,
		},
		{
			name: "awake in its window, woken on demand: it sleeps when the wake ends",
			m:    mgr(nights),
			in:   in(utc("2026-11-24T23:30:00Z"), wokenUntil(utc("2026-11-25T01:00:00Z"))),
			want: Outcome{Verdict: Wait, NextDue: utc("2026-11-25T01:00:00Z"), Policies: []PolicyState{waiting(n, utc("2026-11-25T01:00:00Z"))}},
		},
		{
			name: "awake in its window, a wake that ended: sleep",
			m:    mgr(nights),
			in:   in(utc("2026-11-24T23:30:00Z"), wokenUntil(utc("2026-11-24T23:30:00Z"))),
			want: Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{sleeping(n, closes)}},
		},
		{
			name: "awake outside its windows, woken on demand: nothing changes",
			m:    mgr(nights),
			in:   in(noon, wokenUntil(utc("2026-11-24T13:00:00Z"))),
			want: Outcome{Verdict: Wait, NextDue: opens, Policies: []PolicyState{waiting(n, opens)}},
		},
		{
			name: "awake as the window closes: nothing to do until it reopens",
			m:    mgr(nights),
			in:   in(closes),
			want: Outcome{Verdict: Wait, NextDue: reopens, Policies: []PolicyState{waiting(n, reopens)}},
		},
		{
			// 2026-10-25: 03:00 CEST falls back to 02:00 CET; the window
			// opened at 20:00 CEST (18:00 UTC) closes at 07:00 CET.
			name: "asleep through the autumn change of clocks",
			m:    mgr(nights),
			in:   in(utc("2026-10-25T01:30:00Z"), asleep(n)),
			want: Outcome{Verdict: Wait, NextDue: utc("2026-10-25T06:00:00Z"), Policies: []PolicyState{sleeping(n, utc("2026-10-25T06:00:00Z"))}},
		},
		{
			name: "awake, a condition due outside the windows: it waits for the first window open from then",
			m:    mgr(sleepPolicy(n, Condition{Type: ConditionExpires, At: noon}, nightly)),
			in:   in(noon.Add(-2 * time.Hour)),
			want: Outcome{Verdict: Wait, NextDue: opens, Policies: []PolicyState{waiting(n, opens)}},
		},
		{
			name: "asleep in its window while its condition does not hold: wake",
			m:    mgr(sleepPolicy(n, Condition{Type: ConditionExpires, At: reopens}, nightly)),
			in:   in(opens, asleep(n)),
			want: Outcome{Verdict: Fire, Wake: true, Policy: 0, Policies: []PolicyState{waiting(n, reopens)}},
		},
		{
			name: "outside its windows pods are not asked for",
			m:    mgr(sleepPolicy(n, pods(n).Condition, nightly)),
			in:   in(noon),
			want: Outcome{Verdict: Wait, NextDue: opens, Policies: []PolicyState{waiting(n, opens)}},
		},
		{
			name: "in its window pods are asked for",
			m:    mgr(sleepPolicy(n, pods(n).Condition, nightly)),
			in:   in(opens, asleep(n)),
			want: Outcome{Verdict: NeedPods, Policy: 0},
		},
		{
			name: "in its window, the pods pending: wake",
			m:    mgr(sleepPolicy(n, pods(n).Condition, nightly)),
			in:   in(opens, asleep(n), podsResult(0, 1)),
			want: Outcome{Verdict: Fire, Wake: true, Policy: 0, Policies: []PolicyState{{Name: n}}},
		},
		{
			name: "a SLEEP policy fired in this generation is not skipped",
			m:    mgr(nights),
			in:   in(opens, func(in *Input) { in.Fired = map[string]bool{n: true} }),
			want: Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{sleeping(n, closes)}},
		},
		{
			name: "nor when it is asleep",
			m:    mgr(nights),
			in:   in(closes, asleep(n), func(in *Input) { in.Fired = map[string]bool{n: true} }),
			want: Outcome{Verdict: Fire, Wake: true, Policy: 0, Policies: []PolicyState{waiting(n, reopens)}},
		},

		// An IDLE SLEEP policy.
		{
			name: "idle: a new namespace waits an hour from its creation, asking nothing",
			m:    mgr(idleHour),
			in:   in(at(30 * time.Minute)),
			want: Outcome{Verdict: Wait, NextDue: at(time.Hour), Policies: []PolicyState{waiting(i, at(time.Hour))}},
		},
		{
			name: "idle: its activity is asked for once its creation is an hour old",
			m:    mgr(idleHour),
			in:   in(at(2 * time.Hour)),
			want: Outcome{Verdict: NeedActivity, Policy: 0},
		},
		{
			name: "idle: a pod created half an hour ago keeps it awake",
			m:    mgr(idleHour),
			in:   in(at(2*time.Hour), activity(at(90*time.Minute), "pod web-1 created")),
			want: Outcome{Verdict: Wait, NextDue: at(150 * time.Minute), Policies: []PolicyState{waiting(i, at(150*time.Minute))}},
		},
		{
			name:   "idle an hour: sleep",
			m:      mgr(idleHour),
			in:     in(at(3*time.Hour), activity(at(90*time.Minute), "pod web-1 created")),
			want:   Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{holding(i)}},
			reason: `policy "idle an hour" holds (idle 1h since 2026-03-14T10:56:53Z (last activity: pod web-1 created)): sleep`,
		},
		{
			name: "idle and asleep: only activity ends the sleep",
			m:    mgr(idleHour),
			in:   in(at(5*time.Hour), asleep(i), activity(at(90*time.Minute), "pod web-1 created")),
			want: Outcome{Verdict: Wait, Policies: []PolicyState{sleeping(i, time.Time{})}},
		},
		{
			name:   "idle and asleep, a pod created ten minutes ago: wake",
			m:      mgr(idleHour),
			in:     in(at(5*time.Hour), asleep(i), activity(at(290*time.Minute), "pod web-2 created")),
			want:   Outcome{Verdict: Fire, Wake: true, Policy: 0, Policies: []PolicyState{waiting(i, at(350*time.Minute))}},
			reason: `policy "idle an hour" no longer holds (last activity: pod web-2 created at 2026-03-14T14:16:53Z; idle 1h at 2026-03-14T15:16:53Z): wake`,
		},
		{
			name: "idle and asleep, touched ten minutes ago: wake without reading its activity",
			m:    mgr(idleHour),
			in:   in(at(5*time.Hour), asleep(i), func(in *Input) { in.TargetTouched = at(290 * time.Minute).Format(time.RFC3339) }),
			want: Outcome{Verdict: Fire, Wake: true, Policy: 0, Policies: []PolicyState{waiting(i, at(350*time.Minute))}},
		},

		// Two SLEEP policies: asleep while either holds.
		{
			name: "nights or idle, awake in the window: the nights sleep, idle is not judged",
			m:    mgr(nights, idleHour),
			in:   in(opens),
			want: Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{sleeping(n, closes)}},
		},
		{
			name: "nights or idle, awake outside the window: idle's activity is asked for",
			m:    mgr(nights, idleHour),
			in:   in(noon),
			want: Outcome{Verdict: NeedActivity, Policy: 1},
		},
		{
			name: "nights or idle, awake outside the window and idle: idle sleeps",
			m:    mgr(nights, idleHour),
			in:   in(noon, activity(noon.Add(-2*time.Hour), "pod web-1 created")),
			want: Outcome{Verdict: Fire, Policy: 1, Policies: []PolicyState{waiting(n, opens), holding(i)}},
		},
		{
			name: "nights or idle, asleep in the window: idle's activity is asked for too",
			m:    mgr(nights, idleHour),
			in:   in(opens, asleep(n)),
			want: Outcome{Verdict: NeedActivity, Policy: 1},
		},
		{
			name: "nights or idle, asleep by the nights, idle after the window: it sleeps on",
			m:    mgr(nights, idleHour),
			in:   in(closes, asleep(n), activity(noon, "pod web-1 created")),
			want: Outcome{Verdict: Wait, Policies: []PolicyState{{Name: n}, sleeping(i, time.Time{})}},
		},
		{
			name:   "nights or idle, asleep by the nights, active after the window: wake",
			m:      mgr(nights, idleHour),
			in:     in(closes, asleep(n), activity(closes.Add(-10*time.Minute), "pod web-1 created")),
			want:   Outcome{Verdict: Fire, Wake: true, Policy: 0, Policies: []PolicyState{waiting(i, closes.Add(50*time.Minute)), waiting(n, reopens)}},
			reason: `policy "nights" no longer holds (TTL 0s elapsed at 2026-03-14T09:26:53Z; outside its windows (every day 20:00-07:00 Europe/Berlin) until 2026-11-25T19:00:00Z), nor does policy "idle an hour" (last activity: pod web-1 created at 2026-11-25T05:50:00Z; idle 1h at 2026-11-25T06:50:00Z): wake`,
		},
		{
			name: "nights or idle, asleep by idle, active outside the window: idle wakes it",
			m:    mgr(nights, idleHour),
			in:   in(noon, asleep(i), activity(noon.Add(-10*time.Minute), "pod web-1 created")),
			want: Outcome{Verdict: Fire, Wake: true, Policy: 1, Policies: []PolicyState{waiting(n, opens), waiting(i, noon.Add(50*time.Minute))}},
		},
		{
			name: "nights or idle, asleep by idle, active in the window: the nights keep it asleep",
			m:    mgr(nights, idleHour),
			in:   in(opens, asleep(i), activity(opens.Add(-10*time.Minute), "pod web-1 created")),
			want: Outcome{Verdict: Wait, NextDue: closes, Policies: []PolicyState{sleeping(n, closes), {Name: i}}},
		},
		{
			// Saturday 2026-11-28, 11:00 in Berlin: the weekend's day
			// window, then the night's, then Sunday's, then the night to
			// Monday: asleep until Monday 07:00.
			name: "nights or weekend days, asleep on a Saturday: asleep until Monday morning",
			m:    mgr(nights, sleepPolicy(w, Condition{Type: ConditionTTL}, weekend)),
			in:   in(utc("2026-11-28T10:00:00Z"), asleep(w)),
			want: Outcome{Verdict: Wait, NextDue: utc("2026-11-30T06:00:00Z"), Policies: []PolicyState{{Name: n}, sleeping(w, utc("2026-11-30T06:00:00Z"))}},
		},
		{
			name: "nights or weekend days, asleep on a Friday night: asleep until Monday morning",
			m:    mgr(nights, sleepPolicy(w, Condition{Type: ConditionTTL}, weekend)),
			in:   in(utc("2026-11-27T23:00:00Z"), asleep(n)),
			want: Outcome{Verdict: Wait, NextDue: utc("2026-11-30T06:00:00Z"), Policies: []PolicyState{sleeping(n, utc("2026-11-30T06:00:00Z")), {Name: w}}},
		},
		{
			name: "nights or weekend days, asleep on a Tuesday night: asleep until the morning",
			m:    mgr(nights, sleepPolicy(w, Condition{Type: ConditionTTL}, weekend)),
			in:   in(opens, asleep(n)),
			want: Outcome{Verdict: Wait, NextDue: closes, Policies: []PolicyState{sleeping(n, closes), {Name: w}}},
		},

		// SLEEP and DELETE.
		{
			name: "SLEEP then DELETE, asleep: the DELETE fires",
			m:    mgr(nights, ttl(d, 24*time.Hour)),
			in:   in(opens, asleep(n)),
			want: Outcome{Verdict: Fire, Policy: 1, Policies: []PolicyState{sleeping(n, closes), holding(d)}},
		},
		{
			name: "SLEEP then DELETE, awake in the window: it sleeps first",
			m:    mgr(nights, ttl(d, 24*time.Hour)),
			in:   in(opens),
			want: Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{sleeping(n, closes)}},
		},
		{
			name: "SLEEP then a DELETE not due, asleep: due at the wake, the earlier",
			m:    mgr(nights, ttl(d, 24*time.Hour)),
			in:   in(utc("2026-03-14T21:00:00Z"), asleep(n)),
			want: Outcome{Verdict: Wait, NextDue: utc("2026-03-15T06:00:00Z"), Policies: []PolicyState{
				sleeping(n, utc("2026-03-15T06:00:00Z")), waiting(d, at(24*time.Hour)),
			}},
		},
		{
			name: "SLEEP then a DELETE not due, asleep: due at the DELETE, the earlier",
			m:    mgr(nights, ttl(d, 12*time.Hour)),
			in:   in(utc("2026-03-14T21:00:00Z"), asleep(n)),
			want: Outcome{Verdict: Wait, NextDue: at(12 * time.Hour), Policies: []PolicyState{
				sleeping(n, utc("2026-03-15T06:00:00Z")), waiting(d, at(12*time.Hour)),
			}},
		},
		{
			name: "DELETE then SLEEP, asleep: the DELETE fires, the SLEEP is not judged",
			m:    mgr(ttl(d, 24*time.Hour), nights),
			in:   in(closes, asleep(n)),
			want: Outcome{Verdict: Fire, Policy: 0, Policies: []PolicyState{holding(d)}},
		},
		{
			name: "DELETE not due then SLEEP, awake in the window: sleep",
			m:    mgr(ttl(d, 24*time.Hour), nights),
			in:   in(at(11*time.Hour + 33*time.Minute + 7*time.Second)),
			want: Outcome{Verdict: Fire, Policy: 1, Policies: []PolicyState{waiting(d, at(24*time.Hour)), sleeping(n, utc("2026-03-15T06:00:00Z"))}},
		},
		{
			name: "DELETE not due then SLEEP, asleep after the window: wake",
			m:    mgr(ttl(d, 24*time.Hour), nights),
			in:   in(at(21*time.Hour), asleep(n)),
			want: Outcome{Verdict: Fire, Wake: true, Policy: 1, Policies: []PolicyState{waiting(d, at(24*time.Hour)), waiting(n, utc("2026-03-15T19:00:00Z"))}},
		},

		// What put it to sleep is gone.
		{
			name:   "asleep by a policy the manager no longer has: the first SLEEP policy wakes it",
			m:      mgr(nights),
			in:     in(closes, asleep(gone)),
			want:   Outcome{Verdict: Fire, Wake: true, Policy: 0, Policies: []PolicyState{waiting(n, reopens)}},
			reason: `policy "parked", which put it to sleep, is no longer a SLEEP policy of the manager; policy "nights" does not hold (TTL 0s elapsed at 2026-03-14T09:26:53Z; outside its windows (every day 20:00-07:00 Europe/Berlin) until 2026-11-25T19:00:00Z): wake`,
		},
		{
			name: "asleep by a policy the manager no longer has, another holding: it sleeps on",
			m:    mgr(nights),
			in:   in(opens, asleep(gone)),
			want: Outcome{Verdict: Wait, NextDue: closes, Policies: []PolicyState{sleeping(n, closes)}},
		},
		{
			name: "asleep by a policy that is now a DELETE not due: the first SLEEP policy wakes it",
			m:    mgr(ttl(gone, 24*time.Hour), idleHour, nights),
			in:   in(at(21*time.Hour), asleep(gone), activity(at(20*time.Hour+30*time.Minute), "pod web-1 created")),
			want: Outcome{Verdict: Fire, Wake: true, Policy: 1, Policies: []PolicyState{
				waiting(gone, at(24*time.Hour)), waiting(n, utc("2026-03-15T19:00:00Z")), waiting(i, at(21*time.Hour+30*time.Minute)),
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Evaluate(tt.m, tt.in)
			if !reflect.DeepEqual(comparableSleep(got), comparableSleep(tt.want)) {
				t.Errorf("Evaluate() =\n%+v\nwant\n%+v", comparableSleep(got), comparableSleep(tt.want))
			}
			checkProse(t, got)
			if tt.reason != "" && got.Reason != tt.reason {
				t.Errorf("Reason =\n%s\nwant\n%s", got.Reason, tt.reason)
			}
		})
	}
}
