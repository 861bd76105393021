package sweep

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// eventKinds are the states that get an Event on the manager: what nsman
// did, what failed, and what it refused.
var eventKinds = map[State]struct{ kind, reason string }{
	StateFired:     {corev1.EventTypeNormal, "Fired"},
	StateFailed:    {corev1.EventTypeWarning, "Failed"},
	StateInvalid:   {corev1.EventTypeWarning, "Invalid"},
	StateForbidden: {corev1.EventTypeWarning, "Forbidden"},
}

// announce writes the Event for entry e on the manager, if its state gets
// one. Events are written synchronously, so that they are all there when the
// process exits. A failure to write one is logged, never fatal.
func (s *Sweeper) announce(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured, e Entry) {
	k, ok := eventKinds[e.State]
	if !ok {
		return
	}
	s.emit(ctx, r, obj, k.kind, k.reason, e.Action, e.Message)
}

// holdIgnored is the Event reason for holds nsman ignored.
const holdIgnored = "HoldIgnored"

// emit writes one Event on the manager obj.
func (s *Sweeper) emit(ctx context.Context, r *sweepRun, obj *unstructured.Unstructured, kind, reason, action, note string) {
	suffix := make([]byte, 8)
	_, _ = rand.Read(suffix)
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName() + "." + hex.EncodeToString(suffix)},
		EventTime:  metav1.NewMicroTime(r.now),
		Regarding: corev1.ObjectReference{
			APIVersion:      obj.GetAPIVersion(),
			Kind:            obj.GetKind(),
			Namespace:       obj.GetNamespace(),
			Name:            obj.GetName(),
			UID:             obj.GetUID(),
			ResourceVersion: obj.GetResourceVersion(),
		},
		Type:                kind,
		Reason:              reason,
		Action:              action,
		Note:                truncate(note, maxMessage),
		ReportingController: "nsman.k8s.consol.de/sweep",
		ReportingInstance:   truncate(s.cfg.SweepID, 128),
	}
	if ev.Action == "" {
		ev.Action = "Evaluate"
	}
	if err := s.writer.event(ctx, ev); err != nil {
		s.log.Warn("event not written", "manager", obj.GetNamespace()+"/"+obj.GetName(), "reason", reason, "error", err.Error())
	}
}
