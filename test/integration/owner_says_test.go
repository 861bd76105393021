package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestDeleteTellsWhoMayMakeItAgain, on Argo CD's own CRD: a rule's DELETE
// without via of a namespace whose Application exists goes ahead, and its
// entry, its Event and its notification name the Application, which may
// make the namespace again; one of a namespace that names no owner says
// none. Made again under its name (as Argo CD's self-heal would), the
// namespace came back: the next sweep's entry says so, when the rule
// deleted it, and its owner.
func TestDeleteTellsWhoMayMakeItAgain(t *testing.T) {
	e := setup(t)
	ctx, home, argo, rd := onGitOpsCRDs(t, e)
	caseID := home
	const tracking = "argocd.argoproj.io/tracking-id"
	owned := markedNamespace(t, rd, nil, map[string]string{tracking: "keeper:/Namespace:NS/NS"})
	plain := markedNamespace(t, rd, nil, nil).Name
	createOwner(ctx, t, e.Dynamic, ownerKind(t, "Application"), argo, "keeper", nil)
	ref := "applications.argoproj.io/" + argo + "/keeper"
	createManager(t, managerObj(home, "expire", caseID, []any{ttlPolicy("at once", 0, deleteAction)}, patterns(owned.Name, plain)))
	notify := nsmantest.NewReceiver(t)
	args := []string{"-l", caseLabel + "=" + caseID, "--trusted-namespaces", home, "--argocd-namespace", argo, "--notify-url", notify.URL + "/nsman"}
	says := "namespace " + owned.Name + " is owned by " + ref

	res := e.Sweep(t, args...)
	wantCode(t, res, 0)
	if p := res.Pair(t, home, "expire", owned.Name); p.State != report.StateFired || p.Owner != ref || !p.MayComeBack || !strings.Contains(p.Message, says) || !strings.Contains(p.Message, "may make it again") {
		t.Errorf("the DELETE of %s, owned: %s, owner %q (%s); want fired, naming %s, which may make it again", owned.Name, p.State, p.Owner, p.Message, ref)
	}
	if p := res.Pair(t, home, "expire", plain); p.State != report.StateFired || p.Owner != "" || p.MayComeBack || strings.Contains(p.Message, "owned by") {
		t.Errorf("the DELETE of %s, which names no owner: %s, owner %q (%s); want fired, naming none", plain, p.State, p.Owner, p.Message)
	}
	told := map[string]string{}
	for _, d := range notify.Deliveries() {
		var n tell.Notification
		if err := json.Unmarshal(d.Body, &n); err != nil {
			t.Fatalf("notification %s: %v", d.Body, err)
		}
		told[n.Target] = n.Message
	}
	if !strings.Contains(told[owned.Name], says) || strings.Contains(told[plain], "owned by") || len(told) != 2 {
		t.Errorf("notifications %q; want %s's to say %q, %s's no owner", told, owned.Name, says, plain)
	}
	events, err := shared.Admin.EventsV1().Events(home).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=expire"})
	if err != nil {
		t.Fatal(err)
	}
	noted := 0
	for _, ev := range events.Items {
		if strings.Contains(ev.Note, owned.Name+" (its owner "+ref+" may make it again)") && !strings.Contains(ev.Note, plain+" (") {
			noted++
		}
	}
	if noted != 1 {
		t.Errorf("%d of the rule's %d Events name %s's owner, and it alone, want 1", noted, len(events.Items), owned.Name)
	}

	// Argo CD makes the namespace again, tracking id and all.
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := shared.Admin.CoreV1().Namespaces().Get(ctx, owned.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("namespace %s not gone within a minute of its DELETE: %v", owned.Name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	again := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: owned.Name, Labels: map[string]string{"nsman.test/test": "true"}, Annotations: map[string]string{tracking: "keeper:/Namespace:" + owned.Name + "/" + owned.Name}}}
	if _, err := shared.Admin.CoreV1().Namespaces().Create(ctx, again, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dry := e.Sweep(t, append(args, "--dry-run")...)
	wantCode(t, dry, 0)
	p := dry.Pair(t, home, "expire", owned.Name)
	if p.State != report.StatePlanned || p.CameBack == nil || p.CameBack.Created.Before(p.CameBack.Deleted) || p.Owner != ref ||
		!strings.Contains(p.Message, "namespace "+owned.Name+" came back") || !strings.Contains(p.Message, says) {
		t.Errorf("the namespace made again: %s, came back %+v, owner %q (%s); want planned again, saying it came back and who owns it", p.State, p.CameBack, p.Owner, p.Message)
	}
}
