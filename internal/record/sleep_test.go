package record

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
)

// A record keeps the SLEEP state an outcome sets, clears it when the
// target woke, and otherwise keeps the one it had: a manager's status and a
// rule's record of a namespace alike.
func TestRecordsKeepTheSleep(t *testing.T) {
	nights := &status.Asleep{Policy: "nights", Since: sweepNow.Add(-time.Hour)}
	idle := &status.Asleep{Policy: "idle", Since: sweepNow, Partial: true}
	fired := report.Entry{State: report.StateFired}
	for _, tc := range []struct {
		name string
		was  *status.Asleep
		o    Outcome
		want *status.Asleep
	}{
		{name: "put to sleep", o: Outcome{Entry: fired, Asleep: idle}, want: idle},
		{name: "put to sleep by another policy", was: nights, o: Outcome{Entry: fired, Asleep: idle}, want: idle},
		{name: "woke", was: nights, o: Outcome{Entry: fired, Woke: true}, want: nil},
		{name: "waiting while asleep", was: nights, o: Outcome{Entry: report.Entry{State: report.StateAsleep}}, want: nights},
		{name: "awake and waiting", o: Outcome{Entry: report.Entry{State: report.StateWaiting}}, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := newPair(newRecordingWriter(), namespaceReader(t, nil), listedNamespace(nil), status.PairStatus{Progress: status.Progress{Asleep: tc.was}})
			if got := pr.after(pr.Stored, tc.o).Asleep; !sameAsleep(got, tc.want) {
				t.Errorf("a rule's record: asleep %+v, want %+v", got, tc.want)
			}
			mr := &Manager{Obj: &unstructured.Unstructured{Object: map[string]any{}}, Now: sweepNow}
			st := status.Status{Progress: status.Progress{Asleep: tc.was}}
			if mr.keep(&st, tc.o); !sameAsleep(st.Asleep, tc.want) {
				t.Errorf("a manager's status: asleep %+v, want %+v", st.Asleep, tc.want)
			}
		})
	}
}

func sameAsleep(a, b *status.Asleep) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
