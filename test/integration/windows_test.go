package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/report"
)

// inWindows gives a policy windows.
func inWindows(p map[string]any, windows ...any) map[string]any {
	p["windows"] = windows
	return p
}

// hhmm is t's wall clock in UTC, as a window says it.
func hhmm(t time.Time) string { return t.UTC().Format("15:04") }

// TestWindows: a policy that holds outside its windows waits for the next
// to open (state waiting, the message says why, due and the status's
// nextDue at the opening, which a dry run --at plans to act at); inside
// one, it acts. A time zone nsman does not know is admitted by the CRD,
// and refused by nsman validate and reported invalid by a sweep.
func TestWindows(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	args := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", home}
	now := time.Now().UTC().Truncate(time.Minute)

	later, open, mars := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	opens := now.Add(2 * time.Hour)
	createManager(t, managerObj(home, "later", caseID, []any{inWindows(ttlPolicy("delete at once", 0, deleteAction),
		window(hhmm(opens), hhmm(opens.Add(time.Hour)), "UTC"))}, targeting(later)))
	createManager(t, managerObj(home, "open", caseID, []any{inWindows(ttlPolicy("delete at once", 0, deleteAction),
		window(hhmm(now.Add(-time.Hour)), hhmm(now.Add(time.Hour)), "Europe/Berlin"), window(hhmm(now.Add(-time.Hour)), hhmm(now.Add(time.Hour)), ""))}, targeting(open)))
	marsManager := managerObj(home, "mars", caseID, []any{inWindows(ttlPolicy("delete at once", 0, deleteAction), window("22:00", "06:00", "Mars/Olympus_Mons"))}, targeting(mars))
	createManager(t, marsManager)

	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	w := wantState(t, res, home, "later", report.StateWaiting)
	if w.Due == nil || !w.Due.Equal(opens) || !strings.Contains(w.Message, "outside its windows (every day "+hhmm(opens)+"-") || !w.Conditions[0].Holds {
		t.Errorf("later: due %v, %q, %+v; want it waiting for %s, its condition holding", w.Due, w.Message, w.Conditions, opens)
	}
	if st := managerStatus(t, home, "later"); st.NextDue == nil || !st.NextDue.Time.Equal(opens) {
		t.Errorf("later's status: nextDue %v, want %s", st.NextDue, opens)
	}
	if e.NamespaceGoneOrTerminating(t, later) {
		t.Error("a policy outside its window deleted its namespace")
	}
	wantState(t, res, home, "open", report.StateFired)
	if m := wantState(t, res, home, "mars", report.StateInvalid); !strings.Contains(strings.Join(m.Problems, "\n"), "windows[0].timeZone") {
		t.Errorf("mars: problems %q, want the time zone named", m.Problems)
	}
	if code, out := validate(t, marsManager); code != cmd.ExitFailed || !strings.Contains(out, "must be a time zone of the IANA database") {
		t.Errorf("nsman validate of an unknown time zone: exit %d\n%s", code, out)
	}

	plan := e.Sweep(t, append(args, "--dry-run", "--at", opens.Format(time.RFC3339))...)
	wantState(t, plan, home, "later", report.StatePlanned)
}
