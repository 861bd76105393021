package integration

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// notifiedTargets are the targets of the json notifications r received.
func notifiedTargets(t *testing.T, r *nsmantest.Receiver) []string {
	t.Helper()
	var out []string
	for _, d := range r.Deliveries() {
		var n tell.Notification
		if err := json.Unmarshal(d.Body, &n); err != nil {
			t.Fatalf("notification %s: %v", d.Body, err)
		}
		out = append(out, n.Target)
	}
	slices.Sort(out)
	return out
}

// TestNotifyChannels: with --notify-channel team-a=FILE, a namespace
// annotated notify-channel: team-a is told on team-a's receiver, one with
// no annotation on the default's, and one that names a channel the
// platform has not (or a URL of its own) on the default's, with a warning
// in its entry and a Warning Event NotifyChannelUnknown on its manager.
func TestNotifyChannels(t *testing.T) {
	e := setup(t)
	teamA, plain, unknown := shared.Namespace(t), shared.Namespace(t), shared.Namespace(t)
	caseID := teamA
	annotateNamespace(t, teamA, map[string]string{policy.NotifyChannelAnnotation: "team-a"})
	annotateNamespace(t, unknown, map[string]string{policy.NotifyChannelAnnotation: "team-z"})
	createManager(t, managerObj(teamA, teamA, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	createManager(t, managerObj(plain, plain, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}))
	// The unknown one's manager lives elsewhere, as a platform team's
	// does, so that its Events outlive the namespace it deletes.
	home := nsmantest.ServiceAccountNamespace
	createManager(t, managerObj(home, unknown, caseID, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(unknown)))
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(cluster.ManagerResource).Namespace(home).Delete(context.Background(), unknown, metav1.DeleteOptions{})
	})
	byDefault, byTeamA := nsmantest.NewReceiver(t), nsmantest.NewReceiver(t)
	channelFile := writeTemp(t, "team-a", byTeamA.URL+"/team-a/secret\n")
	res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--notify-url", byDefault.URL+"/default", "--notify-channel", "team-a="+channelFile)
	wantCode(t, res, 0)
	if got := notifiedTargets(t, byTeamA); !slices.Equal(got, []string{teamA}) {
		t.Errorf("team-a's receiver told of %v, want %s alone", got, teamA)
	}
	want := []string{plain, unknown}
	slices.Sort(want)
	if got := notifiedTargets(t, byDefault); !slices.Equal(got, want) {
		t.Errorf("the default's receiver told of %v, want %v", got, want)
	}
	entry := wantState(t, res, home, unknown, report.StateFired)
	if len(entry.Warnings) != 1 || !strings.Contains(entry.Warnings[0], `"team-z" is not one of the platform's`) {
		t.Errorf("entry's warnings %q, want the unknown channel", entry.Warnings)
	}
	if n := sleepEvents(t, home, unknown, tell.NotifyChannelUnknown); n != 1 {
		t.Errorf("%d Events %s on the manager, want 1", n, tell.NotifyChannelUnknown)
	}
	if s := res.Report.Summary.Notifications; s["sent"] != 3 || s["failed"] != 0 {
		t.Errorf("summary notifications %v, want 3 sent", s)
	}
	if strings.Contains(res.Stderr, "secret") {
		t.Errorf("stderr shows team-a's URL: %s", res.Stderr)
	}
}
