package sweep

import (
	"testing"
	"time"

	"github.com/nsman/nsman/report"
)

// TestRunManagers: a manager whose TTL has passed deletes its namespace, one
// not due waits with its due time, a deactivated one is left alone; each
// manager's status says so.
func TestRunManagers(t *testing.T) {
	f := newFakeAPI(t, true,
		namespace("team-due", 2*time.Hour, nil, nil), manager("team-due", "team-due", map[string]any{"policies": []any{ttl(3600, "DELETE", nil)}}),
		namespace("team-later", 2*time.Hour, nil, nil), manager("team-later", "team-later", map[string]any{"policies": []any{ttl(86400, "DELETE", nil)}}),
		namespace("team-paused", 2*time.Hour, nil, nil), manager("team-paused", "team-paused", map[string]any{"deactivated": true, "policies": []any{ttl(60, "DELETE", nil)}}),
	)
	rep, err := sweepOf(t, f, Config{SkipReclaim: true}, nil).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entryOf(t, rep, "team-due", "team-due", ""); e.State != report.StateFired || e.Action != "DELETE" {
		t.Errorf("due: %s %s (%s), want fired DELETE", e.State, e.Action, e.Message)
	}
	if !f.gone("team-due") {
		t.Error("team-due not deleted")
	}
	e := entryOf(t, rep, "team-later", "team-later", "")
	if want := sweepAt.Add(-2 * time.Hour).Add(24 * time.Hour); e.State != report.StateWaiting || e.Due == nil || !e.Due.Equal(want) {
		t.Errorf("not due: %s due %v (%s), want waiting until %s", e.State, e.Due, e.Message, want)
	}
	if e := entryOf(t, rep, "team-paused", "team-paused", ""); e.State != report.StateDeactivated {
		t.Errorf("deactivated: %s (%s)", e.State, e.Message)
	}
	if f.gone("team-later") || f.gone("team-paused") {
		t.Error("a namespace not due was deleted")
	}
	if rep.Summary.Managers != 3 || rep.Summary.States[report.StateFired] != 1 || !rep.Summary.Now.Equal(sweepAt) {
		t.Errorf("summary %+v", rep.Summary)
	}
}
