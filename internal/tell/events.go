package tell

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// eventKinds are the states that get an Event on the manager: what nsman
// did, what failed, and what it refused.
var eventKinds = map[report.State]struct{ kind, reason string }{
	report.StateFired:     {corev1.EventTypeNormal, "Fired"},
	report.StateFailed:    {corev1.EventTypeWarning, "Failed"},
	report.StateInvalid:   {corev1.EventTypeWarning, "Invalid"},
	report.StateForbidden: {corev1.EventTypeWarning, "Forbidden"},
}

// Reasons of the Event of a SLEEP policy's transition, in place of Fired,
// and of the Warning Event that says who woke workloads of a target asleep
// and that they were put back to sleep (one per target and sweep, whatever
// the number of field managers).
const (
	Slept       = "Slept"
	Woke        = "Woke"
	SleepUndone = "SleepUndone"
)

// Incomplete is the reason of the Warning Event of an action that did its
// work but left some as it was: the entry's warnings.
const Incomplete = "Incomplete"

// reasonOf is the reason of the Event of e, fired by reason unless e is a
// SLEEP policy's transition.
func reasonOf(e report.Entry, reason string) string {
	switch {
	case e.State != report.StateFired || !policy.ActionKindOf(e.Action).KeepsState():
		return reason
	case e.Woke:
		return Woke
	}
	return Slept
}

// holdIgnored and annotationIgnored are the Event reasons for holds, and an
// expiry or touched annotation, nsman ignored.
const (
	holdIgnored       = "HoldIgnored"
	annotationIgnored = "AnnotationIgnored"
)

// ManagerEvents tells, of what was recorded, an action's outcome each time
// (a failing action at every attempt), another state when it changes,
// holds newly ignored.
type ManagerEvents struct {
	Writer  write.Writer
	Log     *slog.Logger
	SweepID string
	Obj     *unstructured.Unstructured
	Now     time.Time
}

func (ev ManagerEvents) Tell(ctx context.Context, e report.Entry, before status.Prior, acted, recorded bool) {
	if !recorded || e.State == report.StateFired && policy.ActionKindOf(e.Action).RemovesTarget() && !e.TargetStays && e.Target == ev.Obj.GetNamespace() {
		// The manager went with the namespace it deleted, and its Events
		// would: the outcome is in the logs, the report and the metrics.
		return
	}
	// Workloads woken and put back to sleep are told in one Event,
	// SleepUndone, in place of Slept: each Event is a write the tenant who
	// wakes them could multiply.
	undone := e.State == report.StateFired && len(e.Undone) > 0
	if k, ok := eventKinds[e.State]; ok && (acted || e.State != before.State) && !undone {
		ev.Emit(ctx, k.kind, reasonOf(e, k.reason), e.Action, e.Message)
	}
	if e.HoldIgnored != "" && e.HoldIgnored != before.IgnoredHold {
		ev.Emit(ctx, corev1.EventTypeWarning, holdIgnored, "Evaluate", e.HoldIgnored)
	}
	if w := e.Warning; w != nil && w.State == report.StateFired {
		ev.Emit(ctx, corev1.EventTypeNormal, DueSoon, w.Action, DueSoonText(e.Target, w))
	}
	if undone {
		ev.Emit(ctx, corev1.EventTypeWarning, SleepUndone, e.Action, fmt.Sprintf("woken by %s while namespace %s was asleep; %s", wokenBy(e.Undone), e.Target, putBack(e)))
	}
	if e.AnnotationIgnored != "" && e.AnnotationIgnored != before.IgnoredAnnotation {
		ev.Emit(ctx, corev1.EventTypeWarning, annotationIgnored, "Evaluate", e.AnnotationIgnored)
	}
	if why := e.TrafficUnknown(); why != "" && why != before.TrafficUnknown {
		ev.Emit(ctx, corev1.EventTypeWarning, TrafficUnknown, "Evaluate", trafficNote(e))
	}
	warnings, channel := channelWarning(e.Warnings)
	if acted && len(warnings) > 0 && !undone { // put back to sleep: its one Event is SleepUndone
		ev.Emit(ctx, corev1.EventTypeWarning, Incomplete, e.Action, strings.Join(warnings, "; "))
	}
	if acted && channel != "" {
		ev.Emit(ctx, corev1.EventTypeWarning, NotifyChannelUnknown, e.Action, channel)
	}
	// A manager whose own namespace is stuck is told of it in no Event: its
	// namespace takes no new object.
	if e.Stuck != nil && e.Stuck.Cause() != before.Stuck && e.Target != ev.Obj.GetNamespace() {
		ev.Emit(ctx, corev1.EventTypeWarning, NamespaceStuck, "Evaluate", stuckNote(e.Target, e.Stuck))
	}
}

// DueSoon is the Event reason of a warning (policies[].warnBefore): the
// policy's action is due within one of its thresholds.
const DueSoon = "DueSoon"

// DueSoonText says what warning w tells of target, for an Event or a log.
func DueSoonText(target string, w *report.Warning) string {
	return fmt.Sprintf("policy %q will %s namespace %s at %s (warnBefore %s)", w.Policy, w.Action, target, w.Due.UTC().Format(time.RFC3339), w.Before)
}

// TrafficUnknown is the Event reason for an IDLE policy that waits for
// want of an answer of its traffic source.
const TrafficUnknown = "TrafficUnknown"

// trafficNote is the Event note of e's traffic unknown.
func trafficNote(e report.Entry) string {
	return fmt.Sprintf("the traffic of namespace %s (%s) is not known, and its IDLE policy waits: %s", e.Target, e.Traffic.Source, e.Traffic.Unknown)
}

// NamespaceStuck is the Event reason for a target stuck in Terminating.
const NamespaceStuck = "NamespaceStuck"

// stuckNote is the Event note of namespace stuck as st says.
func stuckNote(namespace string, st *report.Stuck) string {
	parts := make([]string, 0, len(st.Reasons))
	for _, r := range st.Reasons {
		parts = append(parts, r.Reason+": "+r.Message)
	}
	return fmt.Sprintf("namespace %s is stuck in Terminating since %s: %s; nsman explain %s says what holds it",
		namespace, st.Since.UTC().Format(time.RFC3339), strings.Join(parts, "; "), namespace)
}

// Emit writes one Event on the manager.
func (ev ManagerEvents) Emit(ctx context.Context, kind, reason, action, note string) {
	obj := ev.Obj
	suffix := make([]byte, 8)
	_, _ = rand.Read(suffix)
	e := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName() + "." + hex.EncodeToString(suffix)},
		EventTime:  metav1.NewMicroTime(ev.Now),
		Regarding: corev1.ObjectReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(),
			UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion()},
		Type:                kind,
		Reason:              reason,
		Action:              action,
		Note:                status.Truncate(note, status.MaxMessage),
		ReportingController: "nsman.k8s.consol.de/sweep",
		ReportingInstance:   status.Truncate(ev.SweepID, 128),
	}
	if e.Action == "" {
		e.Action = "Evaluate"
	}
	if err := ev.Writer.Event(ctx, e); err != nil {
		ev.Log.Warn("event not written", "manager", obj.GetNamespace()+"/"+obj.GetName(), "reason", reason, "error", err.Error())
	}
}

// RuleTally gathers what a sweep did with a rule's namespaces, recorded or
// not, and tells it in at most five Events on the rule (Flush): the actions
// that fired and the failures that are new, the holds newly ignored, the
// annotations newly ignored, the workloads woken while asleep and put back
// to sleep, and the actions that left workloads as they were (warnings);
// none for a sweep that changed nothing.
type RuleTally struct {
	mu                                                sync.Mutex
	fired, failed, ignored, ignoredAnnotation, undone []string
	// trafficUnknown are the namespaces whose traffic is not known this
	// sweep: a pair keeps no record of it, and the rule is told each sweep.
	trafficUnknown []string
	// incomplete are the namespaces acted on with warnings, and theirs;
	// channelUnknown those notified on the default channel for want of
	// the one they named; dueSoon those warned (policies[].warnBefore).
	incomplete, channelUnknown, dueSoon []string
}

func (t *RuleTally) Tell(_ context.Context, e report.Entry, before status.Prior, _, _ bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	warnings, channel := channelWarning(e.Warnings)
	if len(warnings) > 0 { // only an action carried out has any
		t.incomplete = append(t.incomplete, e.Target+": "+strings.Join(warnings, "; "))
	}
	if channel != "" {
		t.channelUnknown = append(t.channelUnknown, e.Target+": "+channel)
	}
	switch {
	case e.State == report.StateFired:
		fired := e.Target
		if e.MayComeBack {
			fired += " (its owner " + e.Owner + " may make it again)"
		}
		t.fired = append(t.fired, fired)
		if len(e.Undone) > 0 {
			t.undone = append(t.undone, e.Target+" (woken by "+wokenBy(e.Undone)+leftOf(e)+")")
		}
	case e.State == report.StateFailed && !before.Failed:
		t.failed = append(t.failed, e.Target+": "+e.Message)
	}
	if w := e.Warning; w != nil && w.State == report.StateFired {
		t.dueSoon = append(t.dueSoon, e.Target+" ("+w.Action+" at "+w.Due.UTC().Format(time.RFC3339)+")")
	}
	if e.HoldIgnored != "" && e.HoldIgnored != before.IgnoredHold {
		t.ignored = append(t.ignored, e.Target+": "+e.HoldIgnored)
	}
	if e.AnnotationIgnored != "" && e.AnnotationIgnored != before.IgnoredAnnotation {
		t.ignoredAnnotation = append(t.ignoredAnnotation, e.Target+": "+e.AnnotationIgnored)
	}
	if why := e.TrafficUnknown(); why != "" {
		t.trafficUnknown = append(t.trafficUnknown, e.Target+": "+why)
	}
}

// Flush runs once every pair was told.
func (t *RuleTally) Flush(ctx context.Context, rule ManagerEvents) {
	var parts []string
	k := eventKinds[report.StateFired]
	if len(t.fired) > 0 {
		parts = append(parts, fmt.Sprintf("acted on %d namespace(s): %s", len(t.fired), FirstTen(t.fired)))
	}
	if len(t.failed) > 0 {
		k, parts = eventKinds[report.StateFailed], append(parts, fmt.Sprintf("failed on %d namespace(s): %s", len(t.failed), FirstTen(t.failed)))
	}
	if len(parts) > 0 {
		rule.Emit(ctx, k.kind, k.reason, "Act", strings.Join(parts, "; "))
	}
	if len(t.ignored) > 0 {
		rule.Emit(ctx, corev1.EventTypeWarning, holdIgnored, "Evaluate", fmt.Sprintf("holds ignored on %d namespace(s): %s", len(t.ignored), FirstTen(t.ignored)))
	}
	if len(t.ignoredAnnotation) > 0 {
		rule.Emit(ctx, corev1.EventTypeWarning, annotationIgnored, "Evaluate", fmt.Sprintf("annotations ignored on %d namespace(s): %s",
			len(t.ignoredAnnotation), FirstTen(t.ignoredAnnotation)))
	}
	if len(t.trafficUnknown) > 0 {
		rule.Emit(ctx, corev1.EventTypeWarning, TrafficUnknown, "Evaluate", fmt.Sprintf("traffic not known, IDLE waits, in %d namespace(s): %s", len(t.trafficUnknown), FirstTen(t.trafficUnknown)))
	}
	if len(t.undone) > 0 {
		rule.Emit(ctx, corev1.EventTypeWarning, SleepUndone, "Act", fmt.Sprintf("woken while asleep, put back to sleep, in %d namespace(s): %s", len(t.undone), FirstTen(t.undone)))
	}
	if len(t.dueSoon) > 0 {
		rule.Emit(ctx, corev1.EventTypeNormal, DueSoon, "Warn", fmt.Sprintf("warned %d namespace(s) of an action due soon: %s", len(t.dueSoon), FirstTen(t.dueSoon)))
	}
	if len(t.incomplete) > 0 {
		rule.Emit(ctx, corev1.EventTypeWarning, Incomplete, "Act", fmt.Sprintf("left workloads as they were in %d namespace(s): %s", len(t.incomplete), FirstTen(t.incomplete)))
	}
	if len(t.channelUnknown) > 0 {
		rule.Emit(ctx, corev1.EventTypeWarning, NotifyChannelUnknown, "Act", fmt.Sprintf("notify channel unknown in %d namespace(s): %s", len(t.channelUnknown), FirstTen(t.channelUnknown)))
	}
}

// channelWarning splits warnings into the channel's (tell.Route's, at
// most one) and the others, which Incomplete tells.
func channelWarning(warnings []string) (others []string, channel string) {
	for _, w := range warnings {
		if strings.HasPrefix(w, ChannelUnknownPrefix) {
			channel = w
			continue
		}
		others = append(others, w)
	}
	return others, channel
}

// FirstTen joins at most 10 items, saying how many more there are.
func FirstTen(items []string) string { return firstFew(items, 10) }

// firstFew joins at most n items, saying how many more there are.
func firstFew(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

// putBack says what a SleepUndone Event of e tells was done: put back to
// sleep, and how many were and were left awake when some were.
func putBack(e report.Entry) string {
	if e.LeftAwake == 0 {
		return "put back to sleep"
	}
	return fmt.Sprintf("%d put back to sleep, %d more left awake to the next sweeps", e.PutBack, e.LeftAwake)
}

// leftOf says, for a rule's SleepUndone Event, how many workloads e put
// back and left awake, when some were left.
func leftOf(e report.Entry) string {
	if e.LeftAwake == 0 {
		return ""
	}
	return fmt.Sprintf("; %d put back, %d more left awake", e.PutBack, e.LeftAwake)
}

// namedWakers is how many field managers a SleepUndone Event names.
const namedWakers = 3

// wokenBy names the field managers of undone (report.Entry.Undone, lines
// "BY: Kind/name, ..."), the first namedWakers of them, and counts the rest.
func wokenBy(undone []string) string {
	by := make([]string, 0, len(undone))
	for _, line := range undone {
		// The last ": ": a field manager's name may hold one, a workload's
		// kind and name may not.
		if i := strings.LastIndex(line, ": "); i >= 0 {
			line = line[:i]
		}
		by = append(by, line)
	}
	return firstFew(by, namedWakers)
}
