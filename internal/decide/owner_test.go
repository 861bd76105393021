package decide

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

const ownerRef = "applications.argoproj.io/argocd/preview-7"

func ownerIs(p policy.OwnerPresence) *policy.Owner {
	return &policy.Owner{Ref: ownerRef, By: "argocd.argoproj.io/tracking-id", Presence: p}
}

// A manager with an OWNER_GONE policy asks Owners for its target's owner
// once per evaluation, with the ref its record remembers, says the owner in
// its entry, and keeps the owner and when it went in its checks; a manager
// without one never asks.
func TestEvaluateManagerOwnerGone(t *testing.T) {
	orphan := newManager(policies(pol("orphan", ownerGone(300), deleteAction)))
	podsThenOrphan := newManager(policies(pol("tests pass", podsSucceed(1), webhookAction), pol("orphan", ownerGone(300), deleteAction)))
	remembers := func(c policy.CheckState) status.Status {
		return status.Status{Progress: status.Progress{ObservedGeneration: 3, Checks: map[string]policy.CheckState{"orphan": c}}}
	}
	unknown := &policy.Owner{Ref: ownerRef, By: policy.OwnerRemembered, Why: "applications.argoproj.io is not installed"}
	tests := []struct {
		name       string
		obj        *unstructured.Unstructured
		stored     status.Status
		owners     *fakeOwners // nil: the Evaluator has none
		pods       policy.PodsCheck
		want       want
		wantOwner  string
		remembered []string
	}{
		{name: "present: remembered", obj: orphan, owners: &fakeOwners{owner: ownerIs(policy.OwnerPresent)},
			want:      want{state: report.StateWaiting, msg: ownerRef + " (argocd.argoproj.io/tracking-id) exists", checks: map[string]policy.CheckState{"orphan": {Owner: ownerRef}}},
			wantOwner: ownerRef, remembered: []string{""}},
		{name: "found gone: the grace starts", obj: orphan, stored: remembers(policy.CheckState{Owner: ownerRef}), owners: &fakeOwners{owner: ownerIs(policy.OwnerGone)},
			want:      want{state: report.StateWaiting, msg: "gone since 2026-11-23T12:00:00Z; grace 5m elapses at 2026-11-23T12:05:00Z", due: timeAt(5 * time.Minute), checks: map[string]policy.CheckState{"orphan": {Owner: ownerRef, GoneSince: now}}},
			wantOwner: ownerRef, remembered: []string{ownerRef}},
		{name: "gone for the grace: fires", obj: orphan, stored: remembers(policy.CheckState{Owner: ownerRef, GoneSince: now.Add(-5 * time.Minute)}), owners: &fakeOwners{owner: ownerIs(policy.OwnerGone)},
			want: want{policy: "orphan", checks: map[string]policy.CheckState{"orphan": {Owner: ownerRef, GoneSince: now.Add(-5 * time.Minute)}},
				plan: &wantPlan{step: StepAct, policy: "orphan", generation: 3, reason: "gone since 2026-11-23T11:55:00Z; grace 5m elapsed at 2026-11-23T12:00:00Z", name: target, uid: "ns-uid-1"}},
			wantOwner: ownerRef, remembered: []string{ownerRef}},
		{name: "unknown: waits, keeps what it remembers", obj: orphan, stored: remembers(policy.CheckState{Owner: ownerRef, GoneSince: now.Add(-time.Hour)}), owners: &fakeOwners{owner: unknown},
			want:      want{state: report.StateWaiting, msg: "is not known: applications.argoproj.io is not installed", checks: map[string]policy.CheckState{"orphan": {Owner: ownerRef, GoneSince: now.Add(-time.Hour)}}},
			wantOwner: ownerRef, remembered: []string{ownerRef}},
		{name: "no owner: never holds", obj: orphan, owners: &fakeOwners{},
			want: want{state: report.StateWaiting, msg: "the namespace names no owner and its record remembers none"}, remembered: []string{""}},
		{name: "no Owners: an owner that cannot be read", obj: orphan, stored: remembers(policy.CheckState{Owner: ownerRef, GoneSince: now.Add(-time.Hour)}),
			want:      want{state: report.StateWaiting, msg: "this sweep reads no owners", checks: map[string]policy.CheckState{"orphan": {Owner: ownerRef, GoneSince: now.Add(-time.Hour)}}},
			wantOwner: ownerRef},
		{name: "read once however often the policies are evaluated", obj: podsThenOrphan, owners: &fakeOwners{owner: ownerIs(policy.OwnerPresent)}, pods: policy.PodsCheck{NotSucceeded: 1, Example: "pod e2e is Running"},
			want:      want{state: report.StateWaiting, msg: "exists", checks: map[string]policy.CheckState{"orphan": {Owner: ownerRef}}},
			wantOwner: ownerRef, remembered: []string{""}},
		{name: "no condition weighs an owner: asked once the DELETE fires", obj: newManager(), owners: &fakeOwners{owner: ownerIs(policy.OwnerPresent)},
			want:      want{policy: "expire", plan: &wantPlan{step: StepAct, policy: "expire", generation: 3, reason: "TTL 1h elapsed at 2026-11-23T11:00:00Z; namespace preview-7 is owned by " + ownerRef, name: target, uid: "ns-uid-1"}},
			wantOwner: ownerRef, remembered: []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := managerCase{listed: []cluster.Namespace{targetNS()}, pods: fakeCheck{answer: tt.pods}}
			lists := 0
			ev := c.evaluator(&lists)
			if tt.owners != nil {
				ev.Owners = tt.owners
			}
			d := ev.EvaluateManager(t.Context(), tt.obj, tt.stored, c.pods.check)
			checkDecision(t, d, tt.want)
			if d.Entry.Owner != tt.wantOwner {
				t.Errorf("entry's owner %q, want %q", d.Entry.Owner, tt.wantOwner)
			}
			if tt.owners != nil && (!slices.Equal(tt.owners.remembered, tt.remembered) || slices.ContainsFunc(tt.owners.asked, func(ns string) bool { return ns != target })) {
				t.Errorf("Owners asked of %v, remembering %q; want once per evaluation of %s, remembering %q", tt.owners.asked, tt.owners.remembered, target, tt.remembered)
			}
		})
	}
}

// A rule's pair with an OWNER_GONE policy records the owner it sees and,
// once the owner is gone, when a sweep first found it so: the record is
// written when either changes, and not at the sweeps in between, until
// the grace has passed and the policy fires.
func TestEvaluatePairOwnerGone(t *testing.T) {
	rule := newRule(t, pol("orphan", ownerGone(300), deleteAction))
	owners := &fakeOwners{}
	var stored status.PairStatus
	sweep := func(t *testing.T, at time.Time, presence policy.OwnerPresence) Decision {
		t.Helper()
		owners.owner = ownerIs(presence)
		ev := &Evaluator{Now: at, Clock: func() time.Time { return at }, ClaimTTL: 5 * time.Minute, MaxHold: DefaultMaxHold, Trusted: []string{trusted},
			Namespaces: func(context.Context) (map[string]cluster.Namespace, error) {
				return nil, errors.New("a pair is evaluated on the namespace it is given")
			},
			Activity: &fakeActivity{}, Stuck: fakeStuck{}, Budget: &fakeBudget{}, Owners: owners}
		e := report.Entry{Namespace: trusted, Name: "previews", Rule: true, Target: target}
		var pods fakeCheck
		d := ev.EvaluatePair(t.Context(), rule, targetNS(), stored, e, pods.check)
		if d.Entry.Owner != ownerRef {
			t.Errorf("entry's owner %q, want %q", d.Entry.Owner, ownerRef)
		}
		return d
	}
	// keep is what the executor writes of a waiting pair, as the namespace's
	// annotation holds it: JSON.
	keep := func(t *testing.T, d Decision) {
		t.Helper()
		next := stored
		next.Checks = d.Checks
		data, err := json.Marshal(next)
		if err != nil {
			t.Fatal(err)
		}
		stored = status.PairStatus{}
		if err := json.Unmarshal(data, &stored); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name     string
		at       time.Duration
		presence policy.OwnerPresence
		state    report.State
		written  bool
		since    time.Time
	}{
		{"present: the owner is remembered", 0, policy.OwnerPresent, report.StateWaiting, true, time.Time{}},
		{"present again: nothing to write", time.Minute, policy.OwnerPresent, report.StateWaiting, false, time.Time{}},
		{"found gone: when is written", 2 * time.Minute, policy.OwnerGone, report.StateWaiting, true, now.Add(2 * time.Minute)},
		{"still gone, in the grace: nothing to write", 3 * time.Minute, policy.OwnerGone, report.StateWaiting, false, now.Add(2 * time.Minute)},
		{"gone for the grace: fires", 7 * time.Minute, policy.OwnerGone, "", false, now.Add(2 * time.Minute)},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			d := sweep(t, now.Add(s.at), s.presence)
			if d.Entry.State != s.state || (d.Plan != nil) != (s.state == "") {
				t.Fatalf("state %q, plan %+v (%s); want %q", d.Entry.State, d.Plan, d.Entry.Message, s.state)
			}
			if got := d.Checks["orphan"]; got.Owner != ownerRef || !got.GoneSince.Equal(s.since) {
				t.Errorf("checks %+v, want the owner remembered, gone since %v", d.Checks, s.since)
			}
			if s.state != report.StateWaiting {
				return
			}
			if written := record.NeedsRecord(d.Entry, d.Checks, stored.Progress); written != s.written {
				t.Errorf("the record is written: %t, want %t (checks %+v, stored %+v)", written, s.written, d.Checks, stored.Checks)
			}
			keep(t, d)
		})
	}
}

// An OWNER_GONE policy about to fire on the sweep's index of owners acts
// only once a read of its owner by name finds it still gone: present
// again, it waits and the entry says the owner came back; unknown, it
// waits with why, keeping when the owner went. The owner is read again
// once per firing subject, never for one that waits, nor while a hold, a
// freeze or --max-actions keeps it from acting.
func TestEvaluateManagerOwnerGoneConfirmed(t *testing.T) {
	orphan := newManager(policies(pol("orphan", ownerGone(300), deleteAction)))
	ttlFirst := newManager(policies(pol("expire", ttl(3600), deleteAction), pol("orphan", ownerGone(300), deleteAction)))
	idleBeside := newManager(policies(pol("idle", idle(3600), deleteAction), pol("orphan", ownerGone(300), deleteAction)))
	went := now.Add(-10 * time.Minute)
	stored := status.Status{Progress: status.Progress{ObservedGeneration: 3, Checks: map[string]policy.CheckState{"orphan": {Owner: ownerRef, GoneSince: went}}}}
	keeps := map[string]policy.CheckState{"orphan": {Owner: ownerRef, GoneSince: went}}
	fires := want{policy: "orphan", checks: keeps,
		plan: &wantPlan{step: StepAct, policy: "orphan", generation: 3, reason: "gone since 2026-11-23T11:50:00Z; grace 5m elapsed", name: target, uid: "ns-uid-1"}}
	unread := policy.Owner{Presence: policy.OwnerUnknown, Why: `get applications.argoproj.io "preview-7": context deadline exceeded`}
	tests := []struct {
		name      string
		obj       *unstructured.Unstructured
		listed    cluster.Namespace
		stored    status.Status
		index     policy.OwnerPresence
		now       *policy.Owner
		budget    []bool
		frozen    bool
		want      want
		readAgain int
	}{
		{name: "gone by the index, gone by name: fires", obj: orphan, listed: targetNS(), stored: stored, index: policy.OwnerGone, want: fires, readAgain: 1},
		{name: "gone by the index, present by name: came back, waits", obj: orphan, listed: targetNS(), stored: stored, index: policy.OwnerGone, now: ownerIs(policy.OwnerPresent),
			want:      want{state: report.StateWaiting, msg: ownerRef + " (argocd.argoproj.io/tracking-id) exists; the owner came back", checks: map[string]policy.CheckState{"orphan": {Owner: ownerRef}}},
			readAgain: 1},
		{name: "gone by the index, unknown by name: waits with why", obj: orphan, listed: targetNS(), stored: stored, index: policy.OwnerGone, now: &unread,
			want:      want{state: report.StateWaiting, msg: "is not known: " + unread.Why, checks: keeps},
			readAgain: 1},
		{name: "gone in the grace: not read again", obj: orphan, listed: targetNS(), index: policy.OwnerGone,
			want:      want{state: report.StateWaiting, msg: "grace 5m elapses", due: timeAt(5 * time.Minute), checks: map[string]policy.CheckState{"orphan": {Owner: ownerRef, GoneSince: now}}},
			readAgain: 0},
		{name: "present: not read again", obj: orphan, listed: targetNS(), stored: stored, index: policy.OwnerPresent,
			want: want{state: report.StateWaiting, msg: "exists", checks: map[string]policy.CheckState{"orphan": {Owner: ownerRef}}}},
		{name: "an IDLE policy waits beside it: only the owner is read again", obj: idleBeside, listed: targetNS(), stored: stored, index: policy.OwnerGone,
			want: want{policy: "orphan", checks: keeps, plan: fires.plan}, readAgain: 1},
		{name: "another policy fires: not read again", obj: ttlFirst, listed: targetNS(), stored: stored, index: policy.OwnerGone,
			want: want{policy: "expire", checks: keeps, plan: &wantPlan{step: StepAct, policy: "expire", generation: 3, reason: "TTL 1h elapsed", name: target, uid: "ns-uid-1"}}},
		{name: "held: not read again", obj: orphan, listed: targetNS(nsHold(time.Hour)), stored: stored, index: policy.OwnerGone,
			want: want{state: report.StateWaiting, msg: `policy "orphan" holds, but namespace preview-7 is held until`, due: timeAt(time.Hour), heldUntil: timeAt(time.Hour), checks: keeps}},
		{name: "frozen: not read again, the executor defers it", obj: orphan, listed: targetNS(), stored: stored, index: policy.OwnerGone, frozen: true, want: fires},
		{name: "beyond --max-actions: not read again", obj: orphan, listed: targetNS(), stored: stored, index: policy.OwnerGone, budget: []bool{true}, want: fires},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The index's activity is recent: an IDLE policy waits on it.
			c := managerCase{listed: []cluster.Namespace{tt.listed}, budget: tt.budget, frozen: tt.frozen,
				act: fakeActivity{last: policy.Activity{At: now.Add(-time.Minute), What: "pod web-1 created"}, indexed: true}}
			lists := 0
			ev := c.evaluator(&lists)
			owners := &fakeOwners{owner: ownerIs(tt.index), now: tt.now}
			ev.Owners = owners
			d := ev.EvaluateManager(t.Context(), tt.obj, tt.stored, c.pods.check)
			checkDecision(t, d, tt.want)
			if len(owners.readAgain) != tt.readAgain || slices.ContainsFunc(owners.readAgain, func(ref string) bool { return ref != ownerRef }) {
				t.Errorf("owner read again %q, want %d times, of %s", owners.readAgain, tt.readAgain, ownerRef)
			}
			if len(owners.asked) != 1 || c.act.readCalls != 0 {
				t.Errorf("Owners asked %d times, the activity read again %d; want once, never", len(owners.asked), c.act.readCalls)
			}
		})
	}
}

// A rule's pairs read their owner again by name once each that fires on
// the index's word, and not at all while they wait.
func TestEvaluatePairsOwnerGoneReadAgain(t *testing.T) {
	rule := newRule(t, pol("orphan", ownerGone(300), deleteAction))
	owners := &fakeOwners{}
	ev := &Evaluator{Now: now, Clock: func() time.Time { return now }, ClaimTTL: 5 * time.Minute, MaxHold: DefaultMaxHold, Trusted: []string{trusted},
		Activity: &fakeActivity{}, Stuck: fakeStuck{}, Budget: &fakeBudget{}, Owners: owners}
	pairs := []struct {
		went     time.Duration // before now; 0: not found gone before
		presence policy.OwnerPresence
		fires    bool
	}{
		{went: time.Hour, presence: policy.OwnerGone, fires: true},
		{presence: policy.OwnerGone},
		{went: time.Minute, presence: policy.OwnerGone},
		{presence: policy.OwnerPresent},
		{went: 6 * time.Minute, presence: policy.OwnerGone, fires: true},
	}
	for i, p := range pairs {
		owners.owner = ownerIs(p.presence)
		var stored status.PairStatus
		if p.went > 0 {
			stored.Checks = map[string]policy.CheckState{"orphan": {Owner: ownerRef, GoneSince: now.Add(-p.went)}}
		}
		e := report.Entry{Namespace: trusted, Name: "previews", Rule: true, Target: target}
		var pods fakeCheck
		if d := ev.EvaluatePair(t.Context(), rule, targetNS(), stored, e, pods.check); (d.Plan != nil) != p.fires {
			t.Errorf("pair %d: plan %+v (%s), want one: %t", i, d.Plan, d.Entry.Message, p.fires)
		}
	}
	if len(owners.readAgain) != 2 {
		t.Errorf("owners read again %d times, want 2: once per pair that fires", len(owners.readAgain))
	}
}

// A DELETE via owner carries the target's owner in its plan: the one an
// OWNER_GONE condition weighed, else asked of Owners; one the sweep's list
// found gone is read again by name, once, and what that read says goes in
// the plan. A DELETE without via asks for one, to say it, and carries none.
func TestEvaluateManagerViaOwner(t *testing.T) {
	viaOwner := map[string]any{"type": policy.ActionDelete, "params": map[string]any{"via": policy.ViaOwner}}
	ttlVia := newManager(policies(pol("expire", ttl(3600), viaOwner)))
	orphanVia := newManager(policies(pol("orphan", ownerGone(0), viaOwner)))
	tests := []struct {
		name      string
		obj       *unstructured.Unstructured
		owners    *fakeOwners // nil: the Evaluator has none
		want      *policy.Owner
		asked     int
		readAgain int
	}{
		{name: "TTL, owner present: asked, in the plan", obj: ttlVia, owners: &fakeOwners{owner: ownerIs(policy.OwnerPresent)}, want: ownerIs(policy.OwnerPresent), asked: 1},
		{name: "TTL, owner gone by the list, present by name", obj: ttlVia, owners: &fakeOwners{owner: ownerIs(policy.OwnerGone), now: ownerIs(policy.OwnerPresent)},
			want: ownerIs(policy.OwnerPresent), asked: 1, readAgain: 1},
		{name: "TTL, owner gone by the list and by name", obj: ttlVia, owners: &fakeOwners{owner: ownerIs(policy.OwnerGone)}, want: ownerIs(policy.OwnerGone), asked: 1, readAgain: 1},
		{name: "TTL, no owner named: none", obj: ttlVia, owners: &fakeOwners{}, asked: 1},
		{name: "TTL, no Owners: an owner that cannot be read", obj: ttlVia, want: &policy.Owner{Why: "this sweep reads no owners"}},
		{name: "OWNER_GONE: its owner, read again once", obj: orphanVia, owners: &fakeOwners{owner: ownerIs(policy.OwnerGone)}, want: ownerIs(policy.OwnerGone), asked: 1, readAgain: 1},
		{name: "TTL without via: asked, not read again, not in the plan", obj: newManager(), owners: &fakeOwners{owner: ownerIs(policy.OwnerPresent)}, asked: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := plannedFor(t, tt.obj, tt.owners)
			if got := d.Plan.Owner; (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("the plan's owner %+v, want %+v", got, tt.want)
			}
			if tt.want != nil && d.Entry.Owner != tt.want.Ref {
				t.Errorf("entry's owner %q, want %q", d.Entry.Owner, tt.want.Ref)
			}
			if tt.owners != nil && (len(tt.owners.asked) != tt.asked || len(tt.owners.readAgain) != tt.readAgain) {
				t.Errorf("Owners asked %d times, read again %d; want %d and %d", len(tt.owners.asked), len(tt.owners.readAgain), tt.asked, tt.readAgain)
			}
		})
	}
}

// plannedFor is the decision on manager obj, its target listed, its owners
// answered by owners (nil: the Evaluator has none); it fails t unless the
// decision is a plan.
func plannedFor(t *testing.T, obj *unstructured.Unstructured, owners *fakeOwners) Decision {
	t.Helper()
	c := managerCase{listed: []cluster.Namespace{targetNS()}}
	ev := c.evaluator(new(int))
	if owners != nil {
		ev.Owners = owners
	}
	d := ev.EvaluateManager(t.Context(), obj, status.Status{}, c.pods.check)
	if d.Plan == nil {
		t.Fatalf("no plan: %s %s", d.Entry.State, d.Entry.Message)
	}
	return d
}

// An action that removes the target without deleting its owner first
// says, in its entry's owner and its reason (which its Event and its
// notification carry), an owner that exists and may make the namespace
// again; an owner gone, unknown or none is not said, and an action that
// removes nothing asks for none.
func TestEvaluateDeleteSaysItsOwner(t *testing.T) {
	scaleDown := newManager(policies(pol("expire", ttl(3600), map[string]any{"type": policy.ActionScaleDown})))
	unknown := &policy.Owner{Ref: ownerRef, By: "argocd.argoproj.io/tracking-id", Why: "applications.argoproj.io is not installed"}
	tests := []struct {
		name      string
		obj       *unstructured.Unstructured
		owners    *fakeOwners // nil: the Evaluator has none
		wantOwner string
		asked     int
	}{
		{name: "present: said", obj: newManager(), owners: &fakeOwners{owner: ownerIs(policy.OwnerPresent)}, wantOwner: ownerRef, asked: 1},
		{name: "gone: not said", obj: newManager(), owners: &fakeOwners{owner: ownerIs(policy.OwnerGone)}, asked: 1},
		{name: "unknown: not said", obj: newManager(), owners: &fakeOwners{owner: unknown}, asked: 1},
		{name: "none", obj: newManager(), owners: &fakeOwners{}, asked: 1},
		{name: "no Owners: none", obj: newManager()},
		{name: "SCALE_DOWN: none asked", obj: scaleDown, owners: &fakeOwners{owner: ownerIs(policy.OwnerPresent)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := plannedFor(t, tt.obj, tt.owners)
			says := "; namespace preview-7 is owned by " + ownerRef + " (argocd.argoproj.io/tracking-id), which exists and may make it again (DELETE with via: owner deletes the owner first)"
			if want := "TTL 1h elapsed at 2026-11-23T11:00:00Z" + map[bool]string{true: says}[tt.wantOwner != ""]; d.Plan.Reason != want {
				t.Errorf("reason %q, want %q", d.Plan.Reason, want)
			}
			if d.Entry.Owner != tt.wantOwner || d.Entry.MayComeBack != (tt.wantOwner != "") || d.Plan.Owner != nil {
				t.Errorf("entry's owner %q (may come back: %t), the plan's %+v; want %q, none", d.Entry.Owner, d.Entry.MayComeBack, d.Plan.Owner, tt.wantOwner)
			}
			if tt.owners != nil && (len(tt.owners.asked) != tt.asked || len(tt.owners.readAgain) != 0) {
				t.Errorf("Owners asked %d times, read again %d; want %d and never", len(tt.owners.asked), len(tt.owners.readAgain), tt.asked)
			}
		})
	}
}

// A rule's pair whose namespace came back (Entry.CameBack, as the sweep
// found it in the rule's latest actions) says so, with when, in its
// message or, when a policy fires, its plan's reason, naming an owner that
// exists; a pair that did not come back asks for no owner to say it.
func TestEvaluatePairCameBack(t *testing.T) {
	deleted, created := now.Add(-10*time.Minute), now.Add(-5*time.Minute)
	note := "namespace preview-7 came back: made again at 2026-11-23T11:55:00Z, after this rule deleted it at 2026-11-23T11:50:00Z"
	tests := []struct {
		name      string
		seconds   int64 // the TTL
		cameBack  bool
		owner     *policy.Owner
		wantOwner string
		says      string
		asked     int
	}{
		{name: "waiting, its owner there", seconds: 86400, cameBack: true, owner: ownerIs(policy.OwnerPresent), wantOwner: ownerRef, says: note + ", its owner " + ownerRef + " still there", asked: 1},
		{name: "waiting, its owner gone", seconds: 86400, cameBack: true, owner: ownerIs(policy.OwnerGone), says: note, asked: 1},
		{name: "waiting, no owner", seconds: 86400, cameBack: true, says: note, asked: 1},
		{name: "fires: in the reason, with who may make it again", seconds: 60, cameBack: true, owner: ownerIs(policy.OwnerPresent), wantOwner: ownerRef,
			says: "which exists and may make it again (DELETE with via: owner deletes the owner first); " + note + ", its owner " + ownerRef + " still there", asked: 1},
		{name: "did not come back", seconds: 86400, owner: ownerIs(policy.OwnerPresent)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owners := &fakeOwners{owner: tt.owner}
			ev := &Evaluator{Now: now, Clock: func() time.Time { return now }, ClaimTTL: 5 * time.Minute, MaxHold: DefaultMaxHold, Trusted: []string{trusted},
				Activity: &fakeActivity{}, Stuck: fakeStuck{}, Budget: &fakeBudget{}, Owners: owners}
			e := report.Entry{Namespace: trusted, Name: "previews", Rule: true, Target: target}
			if tt.cameBack {
				e.CameBack = &report.CameBack{Deleted: deleted, Created: created}
			}
			ns := targetNS(func(ns *cluster.Namespace) { ns.Created = created })
			var pods fakeCheck
			d := ev.EvaluatePair(t.Context(), newRule(t, pol("expire", ttl(tt.seconds), deleteAction)), ns, status.PairStatus{}, e, pods.check)
			said := d.Entry.Message
			if d.Plan != nil {
				said = d.Plan.Reason
			}
			if tt.says == "" && strings.Contains(said, "came back") || tt.says != "" && !strings.HasSuffix(said, tt.says) {
				t.Errorf("said %q, want it to end in %q", said, tt.says)
			}
			if d.Entry.Owner != tt.wantOwner || len(owners.asked) != tt.asked {
				t.Errorf("entry's owner %q, Owners asked %d times; want %q, %d", d.Entry.Owner, len(owners.asked), tt.wantOwner, tt.asked)
			}
		})
	}
}
