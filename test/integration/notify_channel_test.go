package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell"
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
	annotateNamespace(t, teamA, map[string]string{status.NotifyChannelAnnotation: "team-a"})
	annotateNamespace(t, unknown, map[string]string{status.NotifyChannelAnnotation: "team-z"})
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

// TestNotifyComponentChannelExample: the notify component's commented
// second channel, uncommented as its comment says, mounts the channel's
// Secret where --notify-channel reads it.
func TestNotifyComponentChannelExample(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	deploy := filepath.Join(t.TempDir(), "deploy")
	if out, err := exec.CommandContext(ctx, "cp", "-r", filepath.Join(nsmantest.RepoRoot(), "deploy"), deploy).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	path := filepath.Join(deploy, "components", "notify", "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	example := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "  # channel team-a:"):
			example = true
			continue
		case strings.HasPrefix(line, "  # ") && !strings.HasPrefix(line, "  # signing key") && example:
			line = "  " + strings.TrimPrefix(line, "  # ")
		default:
			example = false
		}
		lines = append(lines, line)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, nsmantest.Kubectl(t), "kustomize", filepath.Join(deploy, "overlays", "notify")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	objs, err := nsmantest.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	cj := typedCronJob(t, cronJobObject(t, objs))
	c := nsmanContainer(t, cj)
	if !slices.Contains(c.Args, "--notify-channel=team-a=/etc/nsman/notify-channels/team-a/url") {
		t.Errorf("args %q lack team-a's channel", c.Args)
	}
	vols := cj.Spec.JobTemplate.Spec.Template.Spec.Volumes
	i := slices.IndexFunc(vols, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "nsman-notify-team-a" })
	if i < 0 || !slices.Equal(vols[i].Secret.Items, []corev1.KeyToPath{{Key: "url", Path: "url"}}) {
		t.Fatalf("volumes %+v, want Secret nsman-notify-team-a's url", vols)
	}
	if !slices.Contains(c.VolumeMounts, corev1.VolumeMount{Name: vols[i].Name, MountPath: "/etc/nsman/notify-channels/team-a", ReadOnly: true}) {
		t.Errorf("mounts %+v, want team-a's read-only at /etc/nsman/notify-channels/team-a", c.VolumeMounts)
	}
}

// TestNotifyChannelsOfARule: a rule's annotation picks the channel of its
// namespaces, and a namespace's own picks over it; an unknown name goes
// to the default, told in one NotifyChannelUnknown Event on the rule.
func TestNotifyChannelsOfARule(t *testing.T) {
	e := setup(t)
	home := shared.Namespace(t)
	caseID := home
	targets := labelled(t, caseID, 3)
	own, ruled, unknown := targets[0], targets[1], targets[2]
	annotateNamespace(t, own, map[string]string{status.NotifyChannelAnnotation: "team-a"})
	annotateNamespace(t, unknown, map[string]string{status.NotifyChannelAnnotation: "team-z"})
	hooks := nsmantest.NewReceiver(t)
	rule := managerObj(home, "leftovers", caseID, []any{ttlPolicy("report it", 0, webhookAction(hooks.URL+"/rule"))}, selecting(caseID))
	rule.SetAnnotations(map[string]string{status.NotifyChannelAnnotation: "team-b"})
	createManager(t, rule)
	byDefault, byTeamA, byTeamB := nsmantest.NewReceiver(t), nsmantest.NewReceiver(t), nsmantest.NewReceiver(t)
	res := e.Sweep(t, "-l", caseLabel+"="+caseID, "--trusted-namespaces", home, "--notify-url", byDefault.URL+"/default",
		"--notify-channel", "team-a="+writeTemp(t, "team-a", byTeamA.URL+"/a"), "--notify-channel", "team-b="+writeTemp(t, "team-b", byTeamB.URL+"/b"))
	wantCode(t, res, 0)
	for _, c := range []struct {
		name string
		r    *nsmantest.Receiver
		want string
	}{{"default", byDefault, unknown}, {"team-a", byTeamA, own}, {"team-b", byTeamB, ruled}} {
		if got := notifiedTargets(t, c.r); !slices.Equal(got, []string{c.want}) {
			t.Errorf("%s's receiver told of %v, want %s alone", c.name, got, c.want)
		}
	}
	if p := res.Pair(t, home, "leftovers", unknown); len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], `"team-z"`) {
		t.Errorf("pair's warnings %q, want the unknown channel", p.Warnings)
	}
	if n := sleepEvents(t, home, "leftovers", tell.NotifyChannelUnknown); n != 1 {
		t.Errorf("%d Events %s on the rule, want 1", n, tell.NotifyChannelUnknown)
	}
}
