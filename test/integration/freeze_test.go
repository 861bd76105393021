package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/report"
)

// TestFreeze: in a freeze (--freeze, or a line of --freeze-file) nothing
// acts: a due manager waits, due at the freeze's end (the one it runs
// into included), the summary says until when; a dry run --at after it
// plans the action, and a sweep outside every freeze acts. A freeze that
// does not parse is a usage error, and the sweep does not run.
func TestFreeze(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	target := shared.Namespace(t)
	createManager(t, managerObj(home, "due", caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(target)))
	args := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", home}
	now := time.Now().UTC().Truncate(time.Second)
	first := now.Add(-time.Hour).Format(time.RFC3339) + "/" + now.Add(time.Hour).Format(time.RFC3339)
	end := now.Add(2 * time.Hour)
	calendar := filepath.Join(t.TempDir(), "holidays.txt")
	if err := os.WriteFile(calendar, []byte("# a freeze the first runs into\n"+now.Add(time.Hour).Format(time.RFC3339)+"/"+end.Format(time.RFC3339)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	res := e.Sweep(t, append(args, "--freeze", first, "--freeze-file", calendar)...)
	wantCode(t, res, 0)
	w := wantState(t, res, home, "due", report.StateWaiting)
	if w.Due == nil || !w.Due.Equal(end) || !strings.Contains(w.Message, "frozen until "+end.Format(time.RFC3339)) {
		t.Errorf("in a freeze: due %v, %q; want it waiting until %s", w.Due, w.Message, end)
	}
	if until := res.Report.Summary.FrozenUntil; until == nil || !until.Equal(end) {
		t.Errorf("summary frozenUntil %v, want %s", until, end)
	}
	if st := managerStatus(t, home, "due"); st.NextDue == nil || !st.NextDue.Time.Equal(end) || st.State != report.StateWaiting {
		t.Errorf("status in a freeze: %s, nextDue %v; want waiting until %s", st.State, st.NextDue, end)
	}
	if e.NamespaceGoneOrTerminating(t, target) {
		t.Fatal("a sweep in a freeze deleted the namespace")
	}
	plan := e.Sweep(t, append(args, "--freeze", first, "--freeze-file", calendar, "--dry-run", "--at", end.Format(time.RFC3339))...)
	wantState(t, plan, home, "due", report.StatePlanned)

	for _, bad := range [][]string{{"--freeze", "tomorrow"}, {"--freeze", "2026-12-24/2026-12-26", "--freeze-time-zone", "Mars/Olympus_Mons"}, {"--freeze-file", calendar + ".missing"}} {
		if res := e.Sweep(t, append(args, bad...)...); res.Code != cmd.ExitUsage || !strings.Contains(res.Stderr, "freeze") {
			t.Errorf("%v: exit %d, %q; want a usage error naming the freeze", bad, res.Code, res.Stderr)
		}
	}
	if e.NamespaceGoneOrTerminating(t, target) {
		t.Fatal("a sweep with a freeze that does not parse ran")
	}
	res = e.Sweep(t, args...)
	wantState(t, res, home, "due", report.StateFired)
}
