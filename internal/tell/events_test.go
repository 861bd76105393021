package tell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// recorder is a Writer that keeps the Events it is asked to write, and
// fails them with err when set; every other request goes to the dry run.
type recorder struct {
	write.Writer
	err    error
	mu     sync.Mutex
	events []*eventsv1.Event
}

func newRecorder() *recorder { return &recorder{Writer: write.New(nil, nil, nil, nil, true)} }

func (r *recorder) Event(_ context.Context, ev *eventsv1.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return r.err
}

// told is what an Event says, the part Tell and Flush decide.
type told struct{ kind, reason, action, note string }

func (r *recorder) told() []told {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]told, 0, len(r.events))
	for _, ev := range r.events {
		out = append(out, told{ev.Type, ev.Reason, ev.Action, ev.Note})
	}
	return out
}

// manager is a NamespaceManager in namespace team-a, as the sweep read it.
func manager() *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("nsman.k8s.consol.de/v1alpha1")
	obj.SetKind("NamespaceManager")
	obj.SetNamespace("team-a")
	obj.SetName("m1")
	obj.SetUID("uid-1")
	obj.SetResourceVersion("42")
	return obj
}

var sweepNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func managerEvents(w write.Writer, log *slog.Logger) ManagerEvents {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return ManagerEvents{Writer: w, Log: log, SweepID: "sweep-1", Obj: manager(), Now: sweepNow}
}

// stuck is a target held in Terminating by the given reasons.
func stuck(reasons ...string) *report.Stuck {
	st := &report.Stuck{Since: time.Date(2026, 3, 1, 2, 0, 0, 0, time.FixedZone("CET", 3600))}
	for _, r := range reasons {
		st.Reasons = append(st.Reasons, report.StuckReason{Reason: r, Message: "held by " + r})
	}
	return st
}

// TestManagerEventsTell: of what was recorded, an action's outcome is told
// each time it was attempted and another state when it changes; a hold,
// an annotation ignored and a stuck target when they are new; nothing of
// what was not recorded, nor of a manager that went with the namespace it
// deleted, nor of a stuck namespace the manager lives in.
func TestManagerEventsTell(t *testing.T) {
	const target = "preview-1"
	fired := func(action string) report.Entry {
		return report.Entry{Target: target, State: report.StateFired, Action: action, Message: "acted"}
	}
	failed := report.Entry{Target: target, State: report.StateFailed, Action: policy.ActionScaleDown, Message: "boom"}
	stuckNoteOf := func(ns string) string {
		return "namespace " + ns + " is stuck in Terminating since 2026-03-01T01:00:00Z: ContentRemaining: held by ContentRemaining; " +
			"nsman explain " + ns + " says what holds it"
	}
	for _, tc := range []struct {
		name            string
		entry           report.Entry
		before          status.Prior
		acted, recorded bool
		want            []told
	}{
		{name: "fired", entry: fired(policy.ActionScaleDown), before: status.Prior{State: report.StateWaiting}, acted: true, recorded: true,
			want: []told{{"Normal", "Fired", policy.ActionScaleDown, "acted"}}},
		{name: "fired, not recorded", entry: fired(policy.ActionScaleDown), acted: true},
		{name: "slept", entry: fired(policy.ActionSleep), before: status.Prior{State: report.StateWaiting}, acted: true, recorded: true,
			want: []told{{"Normal", "Slept", policy.ActionSleep, "acted"}}},
		{name: "woke", entry: func() report.Entry { e := fired(policy.ActionSleep); e.Woke = true; return e }(), before: status.Prior{State: report.StateAsleep}, acted: true, recorded: true,
			want: []told{{"Normal", "Woke", policy.ActionSleep, "acted"}}},
		{name: "put back to sleep", entry: func() report.Entry {
			e := fired(policy.ActionSleep)
			e.Target, e.Undone = "dev-7", []string{"kubectl: Deployment/web", "argocd-application-controller: Rollout/canary"}
			return e
		}(), before: status.Prior{State: report.StateAsleep}, acted: true, recorded: true,
			want: []told{{"Warning", "SleepUndone", policy.ActionSleep, "woken by kubectl, argocd-application-controller while namespace dev-7 was asleep; put back to sleep"}}},
		{name: "put back to sleep, woken by many: one Event", entry: func() report.Entry {
			e := fired(policy.ActionSleep)
			e.Target = "dev-7"
			for i := range 60 {
				e.Undone = append(e.Undone, fmt.Sprintf("fighter-%02d: Deployment/w%02d", i, i))
			}
			e.Undone[1] = "a: b: Deployment/w01, Deployment/x" // a field manager's name may hold ": "
			return e
		}(), before: status.Prior{State: report.StateAsleep}, acted: true, recorded: true,
			want: []told{{"Warning", "SleepUndone", policy.ActionSleep, "woken by fighter-00, a: b, fighter-02 and 57 more while namespace dev-7 was asleep; put back to sleep"}}},
		{name: "put back to sleep, some left awake: the Event counts both", entry: func() report.Entry {
			e := fired(policy.ActionSleep)
			e.Target, e.Undone, e.PutBack, e.LeftAwake = "dev-7", []string{"kubectl: Deployment/w00, Deployment/w01"}, 50, 10
			return e
		}(), before: status.Prior{State: report.StateAsleep}, acted: true, recorded: true,
			want: []told{{"Warning", "SleepUndone", policy.ActionSleep, "woken by kubectl while namespace dev-7 was asleep; 50 put back to sleep, 10 more left awake to the next sweeps"}}},
		{name: "a wake failed", entry: report.Entry{State: report.StateFailed, Action: policy.ActionSleep, Woke: true, Message: "boom"}, before: status.Prior{State: report.StateAsleep}, acted: true, recorded: true,
			want: []told{{"Warning", "Failed", policy.ActionSleep, "boom"}}},
		{name: "fired twice", entry: fired(policy.ActionWebhook), before: status.Prior{State: report.StateFired}, acted: true, recorded: true,
			want: []told{{"Normal", "Fired", policy.ActionWebhook, "acted"}}},
		{name: "DELETE of another namespace", entry: fired(policy.ActionDelete), acted: true, recorded: true,
			want: []told{{"Normal", "Fired", policy.ActionDelete, "acted"}}},
		{name: "DELETE of its own namespace", entry: report.Entry{Target: "team-a", State: report.StateFired, Action: policy.ActionDelete},
			acted: true, recorded: true},
		{name: "DELETE via owner of its own namespace, the owner deleted: the namespace stays", entry: report.Entry{Target: "team-a", State: report.StateFired, Action: policy.ActionDelete, TargetStays: true, Message: "owner deleted"},
			before: status.Prior{State: report.StateWaiting}, acted: true, recorded: true, want: []told{{"Normal", "Fired", policy.ActionDelete, "owner deleted"}}},
		{name: "failed DELETE of its own namespace",
			entry: report.Entry{Target: "team-a", State: report.StateFailed, Action: policy.ActionDelete, Message: "denied"},
			acted: true, recorded: true, want: []told{{"Warning", "Failed", policy.ActionDelete, "denied"}}},
		{name: "SCALE_DOWN of its own namespace", entry: report.Entry{Target: "team-a", State: report.StateFired, Action: policy.ActionScaleDown},
			acted: true, recorded: true, want: []told{{"Normal", "Fired", policy.ActionScaleDown, ""}}},
		{name: "failed again, attempted", entry: failed, before: status.Prior{State: report.StateFailed, Failed: true}, acted: true, recorded: true,
			want: []told{{"Warning", "Failed", policy.ActionScaleDown, "boom"}}},
		{name: "failed again, not attempted", entry: failed, before: status.Prior{State: report.StateFailed, Failed: true}, recorded: true},
		{name: "failed, new state", entry: failed, before: status.Prior{State: report.StateWaiting}, recorded: true,
			want: []told{{"Warning", "Failed", policy.ActionScaleDown, "boom"}}},
		{name: "invalid, new", entry: report.Entry{State: report.StateInvalid, Message: "bad spec"}, before: status.Prior{State: report.StateWaiting},
			recorded: true, want: []told{{"Warning", "Invalid", "Evaluate", "bad spec"}}},
		{name: "invalid, unchanged", entry: report.Entry{State: report.StateInvalid, Message: "bad spec"},
			before: status.Prior{State: report.StateInvalid}, recorded: true},
		{name: "forbidden, new", entry: report.Entry{Target: target, State: report.StateForbidden, Message: "not yours"}, recorded: true,
			want: []told{{"Warning", "Forbidden", "Evaluate", "not yours"}}},
		{name: "forbidden, unchanged", entry: report.Entry{Target: target, State: report.StateForbidden, Message: "not yours"},
			before: status.Prior{State: report.StateForbidden}, recorded: true},
		{name: "waiting after fired", entry: report.Entry{Target: target, State: report.StateWaiting}, before: status.Prior{State: report.StateFired},
			recorded: true},
		{name: "planned, attempted", entry: report.Entry{Target: target, State: report.StatePlanned, Action: policy.ActionDelete}, acted: true,
			recorded: true},
		{name: "target missing", entry: report.Entry{Target: target, State: report.StateTargetMissing}, recorded: true},
		{name: "hold ignored, new", entry: report.Entry{Target: target, State: report.StateWaiting, HoldIgnored: "hold unparseable"},
			before: status.Prior{State: report.StateWaiting}, recorded: true,
			want: []told{{"Warning", "HoldIgnored", "Evaluate", "hold unparseable"}}},
		{name: "hold ignored for another reason", entry: report.Entry{Target: target, State: report.StateWaiting, HoldIgnored: "hold too far"},
			before: status.Prior{State: report.StateWaiting, IgnoredHold: "hold unparseable"}, recorded: true,
			want: []told{{"Warning", "HoldIgnored", "Evaluate", "hold too far"}}},
		{name: "hold ignored, as before", entry: report.Entry{Target: target, State: report.StateWaiting, HoldIgnored: "hold unparseable"},
			before: status.Prior{State: report.StateWaiting, IgnoredHold: "hold unparseable"}, recorded: true},
		{name: "hold ignored, not recorded", entry: report.Entry{Target: target, State: report.StateWaiting, HoldIgnored: "hold unparseable"}},
		{name: "annotation ignored, new", entry: report.Entry{Target: target, State: report.StateWaiting, AnnotationIgnored: "expiry unparseable"},
			before: status.Prior{State: report.StateWaiting}, recorded: true,
			want: []told{{"Warning", "AnnotationIgnored", "Evaluate", "expiry unparseable"}}},
		{name: "annotation ignored, as before", entry: report.Entry{Target: target, State: report.StateWaiting, AnnotationIgnored: "expiry unparseable"},
			before: status.Prior{State: report.StateWaiting, IgnoredAnnotation: "expiry unparseable"}, recorded: true},
		{name: "stuck, new", entry: report.Entry{Target: target, State: report.StateTargetTerminating, Stuck: stuck(report.StuckContentRemaining)},
			before: status.Prior{State: report.StateTargetTerminating}, recorded: true,
			want: []told{{"Warning", "NamespaceStuck", "Evaluate", stuckNoteOf(target)}}},
		{name: "stuck, other cause", entry: report.Entry{Target: target, State: report.StateTargetTerminating, Stuck: stuck(report.StuckContentRemaining)},
			before: status.Prior{State: report.StateTargetTerminating, Stuck: report.StuckFinalizersRemaining}, recorded: true,
			want: []told{{"Warning", "NamespaceStuck", "Evaluate", stuckNoteOf(target)}}},
		{name: "stuck, same cause", entry: report.Entry{Target: target, State: report.StateTargetTerminating, Stuck: stuck(report.StuckContentRemaining)},
			before: status.Prior{State: report.StateTargetTerminating, Stuck: report.StuckContentRemaining}, recorded: true},
		{name: "stuck, its own namespace", entry: report.Entry{Target: "team-a", State: report.StateTargetTerminating, Stuck: stuck(report.StuckContentRemaining)},
			recorded: true},
		{name: "warned", entry: report.Entry{Target: target, State: report.StateWaiting, Warning: dueWarning(report.StateFired)},
			before: status.Prior{State: report.StateWaiting}, recorded: true,
			want: []told{{"Normal", "DueSoon", policy.ActionDelete, `policy "expire" will DELETE namespace preview-1 at 2026-03-04T06:00:00Z (warnBefore 1h)`}}},
		{name: "warned, planned in a dry run", entry: report.Entry{Target: target, State: report.StateWaiting, Warning: dueWarning(report.StatePlanned)},
			before: status.Prior{State: report.StateWaiting}, recorded: true},
		{name: "warned, not recorded", entry: report.Entry{Target: target, State: report.StateWaiting, Warning: dueWarning(report.StateFired)},
			before: status.Prior{State: report.StateWaiting}},
		{name: "failed, hold and annotation ignored, stuck",
			entry: report.Entry{Target: target, State: report.StateFailed, Action: policy.ActionWebhook, Message: "boom",
				HoldIgnored: "hold too far", AnnotationIgnored: "touch ahead", Stuck: stuck(report.StuckContentRemaining)},
			before: status.Prior{State: report.StateFailed, Failed: true}, acted: true, recorded: true,
			want: []told{
				{"Warning", "Failed", policy.ActionWebhook, "boom"},
				{"Warning", "HoldIgnored", "Evaluate", "hold too far"},
				{"Warning", "AnnotationIgnored", "Evaluate", "touch ahead"},
				{"Warning", "NamespaceStuck", "Evaluate", stuckNoteOf(target)},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRecorder()
			managerEvents(w, nil).Tell(t.Context(), tc.entry, tc.before, tc.acted, tc.recorded)
			if got := w.told(); !slices.Equal(got, tc.want) {
				t.Errorf("Events\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

// dueWarning is a warning of DELETE due an hour from sweepNow, in state.
func dueWarning(state report.State) *report.Warning {
	return &report.Warning{Policy: "expire", Action: policy.ActionDelete, Due: time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC), Before: "1h", State: state}
}

// TestStuckNote: the note names the namespace, when it began terminating
// (in UTC, whatever the zone read), every reason with its message, and the
// command that says more.
func TestStuckNote(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   *report.Stuck
		want string
	}{
		{name: "no reason", st: stuck(),
			want: "namespace ns is stuck in Terminating since 2026-03-01T01:00:00Z: ; nsman explain ns says what holds it"},
		{name: "one reason", st: stuck(report.StuckNamespaceFinalizers),
			want: "namespace ns is stuck in Terminating since 2026-03-01T01:00:00Z: NamespaceFinalizers: held by NamespaceFinalizers; " +
				"nsman explain ns says what holds it"},
		{name: "two reasons", st: stuck(report.StuckDiscoveryFailure, report.StuckFinalizersRemaining),
			want: "namespace ns is stuck in Terminating since 2026-03-01T01:00:00Z: DiscoveryFailure: held by DiscoveryFailure; " +
				"FinalizersRemaining: held by FinalizersRemaining; nsman explain ns says what holds it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stuckNote("ns", tc.st); got != tc.want {
				t.Errorf("stuckNote\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestEmit: an Event is named for the manager with a random suffix (so
// that two in the same sweep do not collide), regards the very object read,
// and keeps its note and reporting instance within what the API accepts.
func TestEmit(t *testing.T) {
	long := strings.Repeat("é", status.MaxMessage)
	longID := strings.Repeat("s", 200)
	for _, tc := range []struct {
		name, sweepID, action, note string
		wantInstance, wantAction    string
		wantNote                    string
	}{
		{name: "as given", sweepID: "sweep-1", action: policy.ActionScaleDown, note: "scaled",
			wantInstance: "sweep-1", wantAction: policy.ActionScaleDown, wantNote: "scaled"},
		{name: "no action", sweepID: "sweep-1", note: "looked",
			wantInstance: "sweep-1", wantAction: "Evaluate", wantNote: "looked"},
		{name: "long note and sweep ID", sweepID: longID, action: "Act", note: long,
			wantInstance: status.Truncate(longID, 128), wantAction: "Act", wantNote: status.Truncate(long, status.MaxMessage)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRecorder()
			ev := managerEvents(w, nil)
			ev.SweepID = tc.sweepID
			ev.Emit(t.Context(), "Warning", "Reason", tc.action, tc.note)
			ev.Emit(t.Context(), "Warning", "Reason", tc.action, tc.note)
			if len(w.events) != 2 {
				t.Fatalf("%d Events written, want 2", len(w.events))
			}
			name := regexp.MustCompile(`^m1\.[0-9a-f]{16}$`)
			for _, e := range w.events {
				if !name.MatchString(e.Name) || e.Namespace != "team-a" {
					t.Errorf("Event %s/%s, want team-a/m1.<16 hex digits>", e.Namespace, e.Name)
				}
				r := e.Regarding
				if r.APIVersion != "nsman.k8s.consol.de/v1alpha1" || r.Kind != "NamespaceManager" || r.Namespace != "team-a" || r.Name != "m1" ||
					r.UID != "uid-1" || r.ResourceVersion != "42" {
					t.Errorf("Regarding %+v, want the manager read", r)
				}
				if !e.EventTime.Time.Equal(sweepNow) {
					t.Errorf("EventTime %v, want %v", e.EventTime, sweepNow)
				}
				if e.ReportingController != "nsman.k8s.consol.de/sweep" || e.ReportingInstance != tc.wantInstance {
					t.Errorf("reporting %q/%q, want nsman.k8s.consol.de/sweep/%q", e.ReportingController, e.ReportingInstance, tc.wantInstance)
				}
				if len(e.ReportingInstance) > 128 || len(e.Note) > status.MaxMessage {
					t.Errorf("reporting instance of %d bytes, note of %d: want at most 128 and %d", len(e.ReportingInstance), len(e.Note), status.MaxMessage)
				}
				if e.Type != "Warning" || e.Reason != "Reason" || e.Action != tc.wantAction || e.Note != tc.wantNote {
					t.Errorf("Event %s %s %s %.40q, want Warning Reason %s %.40q", e.Type, e.Reason, e.Action, e.Note, tc.wantAction, tc.wantNote)
				}
			}
			if w.events[0].Name == w.events[1].Name {
				t.Errorf("two Events named %s", w.events[0].Name)
			}
		})
	}
}

// TestEmitLogsWriteError: an Event not written is logged with the manager
// and reason, and the sweep goes on.
func TestEmitLogsWriteError(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		wantLog []string
	}{
		{name: "written", err: nil},
		{name: "refused", err: errors.New("events is forbidden"),
			wantLog: []string{"level=WARN", `msg="event not written"`, "manager=team-a/m1", "reason=Fired", `error="events is forbidden"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := newRecorder()
			w.err = tc.err
			managerEvents(w, slog.New(slog.NewTextHandler(&buf, nil))).Emit(t.Context(), "Normal", "Fired", policy.ActionDelete, "deleted")
			if len(w.events) != 1 {
				t.Fatalf("%d Events attempted, want 1", len(w.events))
			}
			logged := buf.String()
			if len(tc.wantLog) == 0 && logged != "" {
				t.Errorf("logged %q, want nothing", logged)
			}
			for _, want := range tc.wantLog {
				if !strings.Contains(logged, want) {
					t.Errorf("log %q lacks %q", logged, want)
				}
			}
		})
	}
}

// TestRuleTallyFlush: a rule's sweep is told in one Event of what fired
// (with the owner that may make a namespace removed again; a Warning when
// failures are new), one of the holds and one of the
// annotations newly ignored, recorded or not; nothing when nothing changed.
func TestRuleTallyFlush(t *testing.T) {
	type heard struct {
		entry  report.Entry
		before status.Prior
	}
	fired := func(ns string) heard { return heard{entry: report.Entry{Target: ns, State: report.StateFired}} }
	failed := func(ns string, before bool) heard {
		return heard{entry: report.Entry{Target: ns, State: report.StateFailed, Message: "boom"}, before: status.Prior{Failed: before}}
	}
	hold := func(ns, why, before string) heard {
		return heard{entry: report.Entry{Target: ns, State: report.StateWaiting, HoldIgnored: why}, before: status.Prior{IgnoredHold: before}}
	}
	annotation := func(ns, why, before string) heard {
		return heard{entry: report.Entry{Target: ns, State: report.StateWaiting, AnnotationIgnored: why},
			before: status.Prior{IgnoredAnnotation: before}}
	}
	for _, tc := range []struct {
		name  string
		heard []heard
		want  []told
	}{
		{name: "nothing heard"},
		{name: "nothing changed", heard: []heard{
			{entry: report.Entry{Target: "a", State: report.StateWaiting}},
			{entry: report.Entry{Target: "b", State: report.StatePlanned}},
			{entry: report.Entry{Target: "c", State: report.StateInvalid}},
			failed("d", true), hold("e", "too far", "too far"), annotation("f", "bad expiry", "bad expiry"),
		}},
		{name: "fired", heard: []heard{fired("a"), fired("b")},
			want: []told{{"Normal", "Fired", "Act", "acted on 2 namespace(s): a, b"}}},
		{name: "put back to sleep", heard: []heard{{entry: report.Entry{Target: "a", State: report.StateFired, Action: policy.ActionSleep, Undone: []string{"kubectl: Deployment/web"}}}},
			want: []told{{"Normal", "Fired", "Act", "acted on 1 namespace(s): a"}, {"Warning", "SleepUndone", "Act", "woken while asleep, put back to sleep, in 1 namespace(s): a (woken by kubectl)"}}},
		{name: "put back to sleep, woken by many in two namespaces: one Event", heard: []heard{
			{entry: report.Entry{Target: "a", State: report.StateFired, Action: policy.ActionSleep, Undone: []string{"p: Deployment/x", "q: Deployment/y", "r: Deployment/z", "s: CronJob/c"}}},
			{entry: report.Entry{Target: "b", State: report.StateFired, Action: policy.ActionSleep, Undone: []string{"kubectl: Deployment/web, Deployment/api"}}}},
			want: []told{{"Normal", "Fired", "Act", "acted on 2 namespace(s): a, b"},
				{"Warning", "SleepUndone", "Act", "woken while asleep, put back to sleep, in 2 namespace(s): a (woken by p, q, r and 1 more), b (woken by kubectl)"}}},
		{name: "put back to sleep, some left awake: counted", heard: []heard{
			{entry: report.Entry{Target: "a", State: report.StateFired, Action: policy.ActionSleep, Undone: []string{"kubectl: Deployment/web"}, PutBack: 50, LeftAwake: 7}}},
			want: []told{{"Normal", "Fired", "Act", "acted on 1 namespace(s): a"},
				{"Warning", "SleepUndone", "Act", "woken while asleep, put back to sleep, in 1 namespace(s): a (woken by kubectl; 50 put back, 7 more left awake)"}}},
		{name: "fired, an owner that exists named", heard: []heard{fired("a"), {entry: report.Entry{Target: "b", State: report.StateFired, Owner: "applications.argoproj.io/argocd/b", MayComeBack: true}},
			{entry: report.Entry{Target: "c", State: report.StateFired, Owner: "applications.argoproj.io/argocd/c"}}},
			want: []told{{"Normal", "Fired", "Act", "acted on 3 namespace(s): a, b (its owner applications.argoproj.io/argocd/b may make it again), c"}}},
		{name: "failed, new", heard: []heard{failed("a", false)},
			want: []told{{"Warning", "Failed", "Act", "failed on 1 namespace(s): a: boom"}}},
		{name: "fired and failed", heard: []heard{fired("a"), failed("b", false), failed("c", true)},
			want: []told{{"Warning", "Failed", "Act", "acted on 1 namespace(s): a; failed on 1 namespace(s): b: boom"}}},
		{name: "holds ignored", heard: []heard{hold("a", "too far", ""), hold("b", "unparseable", "too far"), hold("c", "too far", "too far")},
			want: []told{{"Warning", "HoldIgnored", "Evaluate", "holds ignored on 2 namespace(s): a: too far, b: unparseable"}}},
		{name: "warned, and planned in a dry run", heard: []heard{
			{entry: report.Entry{Target: "a", State: report.StateWaiting, Warning: dueWarning(report.StateFired)}},
			{entry: report.Entry{Target: "b", State: report.StateWaiting, Warning: dueWarning(report.StatePlanned)}}},
			want: []told{{"Normal", "DueSoon", "Warn", "warned 1 namespace(s) of an action due soon: a (DELETE at 2026-03-04T06:00:00Z)"}}},
		{name: "annotations ignored", heard: []heard{annotation("a", "bad expiry", ""), annotation("b", "bad expiry", "bad expiry")},
			want: []told{{"Warning", "AnnotationIgnored", "Evaluate", "annotations ignored on 1 namespace(s): a: bad expiry"}}},
		{name: "all of it", heard: []heard{annotation("c", "touch ahead", ""), hold("b", "too far", ""), fired("a")},
			want: []told{
				{"Normal", "Fired", "Act", "acted on 1 namespace(s): a"},
				{"Warning", "HoldIgnored", "Evaluate", "holds ignored on 1 namespace(s): b: too far"},
				{"Warning", "AnnotationIgnored", "Evaluate", "annotations ignored on 1 namespace(s): c: touch ahead"},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRecorder()
			var tally RuleTally
			for i, h := range tc.heard {
				// What the rule's record holds is the tally's business, not
				// whether it was written: acted and recorded vary.
				tally.Tell(t.Context(), h.entry, h.before, i%2 == 0, i%3 == 0)
			}
			tally.Flush(t.Context(), managerEvents(w, nil))
			if got := w.told(); !slices.Equal(got, tc.want) {
				t.Errorf("Events\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

// TestRuleTallyConcurrent: the rule's pairs are told from many goroutines
// at once, and the Events count every one of them (run with -race).
func TestRuleTallyConcurrent(t *testing.T) {
	const n = 40
	var tally RuleTally
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ns := fmt.Sprintf("ns-%02d", i)
			tally.Tell(t.Context(), report.Entry{Target: ns, State: report.StateFired, HoldIgnored: "too far"}, status.Prior{}, true, true)
		})
	}
	wg.Wait()
	w := newRecorder()
	tally.Flush(t.Context(), managerEvents(w, nil))
	got := w.told()
	if len(got) != 2 || got[0].reason != "Fired" || got[1].reason != "HoldIgnored" {
		t.Fatalf("Events %v, want one Fired and one HoldIgnored", got)
	}
	listed := regexp.MustCompile(`ns-\d\d`).FindAllString(got[0].note, -1)
	slices.Sort(listed)
	if !strings.HasPrefix(got[0].note, fmt.Sprintf("acted on %d namespace(s): ", n)) || !strings.HasSuffix(got[0].note, fmt.Sprintf(" and %d more", n-10)) ||
		len(slices.Compact(listed)) != 10 {
		t.Errorf("note %q, want %d namespaces counted and 10 distinct ones listed", got[0].note, n)
	}
	if !strings.HasPrefix(got[1].note, fmt.Sprintf("holds ignored on %d namespace(s): ", n)) {
		t.Errorf("note %q, want %d holds counted", got[1].note, n)
	}
}

// TestFirstTen: an Event lists at most ten items, however many there are,
// and says how many it left out.
func TestFirstTen(t *testing.T) {
	items := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprint(i)
		}
		return out
	}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, ""},
		{1, "0"},
		{10, "0, 1, 2, 3, 4, 5, 6, 7, 8, 9"},
		{11, "0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 1 more"},
		{25, "0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 15 more"},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			if got := FirstTen(items(tc.n)); got != tc.want {
				t.Errorf("FirstTen of %d items = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}

// An action that did its work but left some as it was (the entry's
// warnings) is told in a Warning Event Incomplete: on a manager at each
// action but a put back to sleep, on a rule once per sweep for all its
// namespaces.
func TestIncompleteEvents(t *testing.T) {
	warned := report.Entry{Target: "a", State: report.StateFired, Action: policy.ActionSleep,
		Warnings: []string{"discovery failed for API group(s) metrics.example.com/v1beta1: their kinds were neither put to sleep nor woken", "refused (403), left as they were: Rollout/canary"}}
	w := newRecorder()
	managerEvents(w, nil).Tell(t.Context(), warned, status.Prior{}, true, true)
	want := []told{{"Normal", "Slept", "SLEEP", ""}, {"Warning", "Incomplete", "SLEEP", strings.Join(warned.Warnings, "; ")}}
	if got := w.told(); !slices.Equal(got, want) {
		t.Errorf("manager's Events\n%v\nwant\n%v", got, want)
	}

	// Put back to sleep, the one Event is SleepUndone: a tenant who wakes
	// workloads adds no Incomplete to it.
	w = newRecorder()
	resleep := warned
	resleep.Undone = []string{"kubectl: Deployment/web"}
	managerEvents(w, nil).Tell(t.Context(), resleep, status.Prior{}, true, true)
	if got := w.told(); len(got) != 1 || got[0].reason != "SleepUndone" {
		t.Errorf("Events of a sleep put back %v, want SleepUndone alone", got)
	}

	w = newRecorder()
	var tally RuleTally
	tally.Tell(t.Context(), warned, status.Prior{}, true, true)
	other := warned
	other.Target = "b"
	tally.Tell(t.Context(), other, status.Prior{}, true, true)
	tally.Tell(t.Context(), report.Entry{Target: "c", State: report.StateFired, Action: policy.ActionSleep}, status.Prior{}, true, true)
	tally.Flush(t.Context(), managerEvents(w, nil))
	got := w.told()
	if len(got) != 2 || got[1].kind != "Warning" || got[1].reason != "Incomplete" ||
		!strings.HasPrefix(got[1].note, "left workloads as they were in 2 namespace(s): a: discovery failed for API group(s) metrics.example.com/v1beta1") {
		t.Errorf("rule's Events %v, want Fired, then one Incomplete naming a and b", got)
	}
}

// A notification sent to the default channel for want of the one named
// (Route's warning, among the entry's) is told in a Warning Event
// NotifyChannelUnknown, not Incomplete: on a manager at the action, on a
// rule once per sweep for all its namespaces.
func TestNotifyChannelUnknownEvents(t *testing.T) {
	_, unknown := NewNotifier("https://hooks.example/default", DefaultFormat, nil).Route("team-z", "")
	warned := report.Entry{Target: "a", State: report.StateFired, Action: policy.ActionSleep, Warnings: []string{"refused (403), left as they were: Rollout/canary", unknown}}
	w := newRecorder()
	managerEvents(w, nil).Tell(t.Context(), warned, status.Prior{}, true, true)
	want := []told{{"Normal", "Slept", "SLEEP", ""}, {"Warning", "Incomplete", "SLEEP", warned.Warnings[0]}, {"Warning", NotifyChannelUnknown, "SLEEP", unknown}}
	if got := w.told(); !slices.Equal(got, want) {
		t.Errorf("manager's Events\n%v\nwant\n%v", got, want)
	}

	w = newRecorder()
	var tally RuleTally
	only := report.Entry{Target: "b", State: report.StateFired, Action: policy.ActionSleep, Warnings: []string{unknown}}
	tally.Tell(t.Context(), only, status.Prior{}, true, true)
	tally.Flush(t.Context(), managerEvents(w, nil))
	got := w.told()
	if len(got) != 2 || got[1].reason != NotifyChannelUnknown || got[1].note != "notify channel unknown in 1 namespace(s): b: "+unknown {
		t.Errorf("rule's Events %v, want Fired, then one NotifyChannelUnknown naming b", got)
	}
}
