package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/tell"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// warnExamples are the examples whose policies warn before they act:
// TestWarnExamplesPlayOut plays them out, TestExamplesPlayOut leaves them
// to it (their TTLs are days, and a warning is what they show).
var warnExamples = []string{"warn-preview-ttl.yaml"}

// TestWarnExamplesPlayOut plays out each example whose policy has
// warnBefore: the manifest validates; a sweep with the TTL as written warns
// no one; with the TTL made due in 2 hours, a dry run plans the warning of
// the 24h threshold and sends nothing, a sweep sends it once on the channel
// the namespace's annotation picks (with its links; the default channel
// gets nothing) and writes a DueSoon Event, the next sweep does not warn
// again; with the TTL made due in 30 minutes (a moved due time), the next
// sweep warns once more, at the 1h threshold. The namespace is never
// deleted.
func TestWarnExamplesPlayOut(t *testing.T) {
	e := setup(t)
	for _, name := range warnExamples {
		t.Run(name, func(t *testing.T) {
			objs := nsmantest.Example(t, name)
			playOutWarn(t, e, objs)
		})
	}
}

// warnExample is what playOutWarn reads of an example: its one manager,
// parsed, and the channel its target's annotation picks.
type warnExample struct {
	m       policy.Manager
	channel string
}

// readWarnExample labels objs' manager for run and parses it, failing
// unless it is valid, has a policy with warnBefore and a target in objs
// annotated with a channel.
func readWarnExample(t *testing.T, objs []*unstructured.Unstructured, run string) warnExample {
	t.Helper()
	var x warnExample
	for _, obj := range objs {
		if obj.GetKind() != policy.Kind {
			continue
		}
		obj.SetLabels(map[string]string{nsmantest.PlayOutLabel: run})
		var problems field.ErrorList
		if x.m, problems = policy.ParseStrict(obj); len(problems) > 0 {
			t.Fatalf("manager %s/%s invalid: %v", obj.GetNamespace(), obj.GetName(), problems)
		}
	}
	for _, obj := range objs {
		if obj.GetKind() == "Namespace" && obj.GetName() == x.m.Target() {
			x.channel = obj.GetAnnotations()[status.NotifyChannelAnnotation]
		}
	}
	if x.m.Name == "" || len(x.m.Policies) != 1 || len(x.m.Policies[0].WarnBefore) == 0 || x.channel == "" {
		t.Fatalf("the example has no manager with one policy with warnBefore, or its namespace picks no channel: %+v, channel %q", x.m, x.channel)
	}
	return x
}

func playOutWarn(t *testing.T, e *nsmantest.Env, objs []*unstructured.Unstructured) {
	t.Helper()
	run := fmt.Sprintf("warn-run-%d", time.Now().UnixNano())
	x := readWarnExample(t, objs, run)
	m, ns := x.m, x.m.Target()
	applyDeleting(t, e, objs, ns)
	byDefault, byChannel := nsmantest.NewReceiver(t), nsmantest.NewReceiver(t)
	args := []string{"-l", nsmantest.PlayOutLabel + "=" + run, "--notify-url", byDefault.URL + "/default",
		"--notify-channel", x.channel + "=" + writeTemp(t, "channel", byChannel.URL+"/"+x.channel+"\n"),
		"--links-url", "https://nsman.example.invalid", "--links-signing-key-file", writeTemp(t, "links-key", "not a real key\n")}
	sweep := func(extra ...string) report.Entry {
		t.Helper()
		res := e.Sweep(t, append(args, extra...)...)
		wantCode(t, res, 0)
		return wantState(t, res, m.Namespace, m.Name, report.StateWaiting)
	}

	if w := sweep().Warning; w != nil || len(byChannel.Deliveries())+len(byDefault.Deliveries()) != 0 {
		t.Fatalf("with the TTL as written: warning %+v, %d deliveries; want none", w, len(byChannel.Deliveries())+len(byDefault.Deliveries()))
	}

	dueInTTL(t, e, m, dueIn(t, ns, 2*time.Hour))
	if w := sweep("--dry-run").Warning; w == nil || w.State != report.StatePlanned || w.Before != "1d" || len(byChannel.Deliveries()) != 0 {
		t.Fatalf("dry run 2 h before: warning %+v, %d deliveries; want the 24h one planned and none sent", w, len(byChannel.Deliveries()))
	}
	entry := sweep()
	if w := entry.Warning; w == nil || w.State != report.StateFired || w.Before != "1d" || w.Action != policy.ActionDelete || !strings.Contains(entry.Message, "warned: ") {
		t.Fatalf("sweep 2 h before: warning %+v, message %q; want the 24h one told", w, entry.Message)
	}
	got := dueSoon(t, byChannel)[ns]
	if len(got) != 1 || len(byChannel.Deliveries()) != 1 || len(byDefault.Deliveries()) != 0 {
		t.Fatalf("channel %s told %d times (%d deliveries), the default %d times; want once on the channel", x.channel, len(got), len(byChannel.Deliveries()), len(byDefault.Deliveries()))
	}
	n := got[0]
	if n.Due == nil || n.Action != policy.ActionDelete || n.Policy != m.Policies[0].Name || n.Result != tell.ResultPending || len(n.Links) != 3 ||
		time.Until(*n.Due) > 2*time.Hour || time.Until(*n.Due) < 2*time.Hour-time.Minute {
		t.Errorf("dueSoon notification %+v", n)
	}
	wantEvent(t, m.Namespace, m.Name, tell.DueSoon)
	if w := sweep().Warning; w != nil || len(byChannel.Deliveries()) != 1 {
		t.Fatalf("the next sweep: warning %+v, %d deliveries; want none and still 1", w, len(byChannel.Deliveries()))
	}

	dueInTTL(t, e, m, dueIn(t, ns, 30*time.Minute))
	if w := sweep().Warning; w == nil || w.State != report.StateFired || w.Before != "1h" || len(dueSoon(t, byChannel)[ns]) != 2 {
		t.Fatalf("due time moved to 30 min: warning %+v, %d deliveries; want the 1h one told", w, len(byChannel.Deliveries()))
	}
	if e.NamespaceGoneOrTerminating(t, ns) || len(byDefault.Deliveries()) != 0 {
		t.Errorf("namespace %s gone, or the default channel told %d times", ns, len(byDefault.Deliveries()))
	}
}

// applyDeleting applies objs, and deletes namespace ns when t ends.
func applyDeleting(t *testing.T, e *nsmantest.Env, objs []*unstructured.Unstructured, ns string) {
	t.Helper()
	e.ApplyObjects(t, objs)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = shared.Admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
}

// dueInTTL sets the TTL of manager m's one policy to ttl seconds.
func dueInTTL(t *testing.T, e *nsmantest.Env, m policy.Manager, ttl int64) {
	t.Helper()
	obj := e.Manager(t, m.Namespace, m.Name)
	policies, _, _ := unstructured.NestedSlice(obj.Object, "spec", "policies")
	if err := unstructured.SetNestedField(policies[0].(map[string]any), ttl, "condition", "params", "ttlSeconds"); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedSlice(obj.Object, policies, "spec", "policies")
	if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(m.Namespace).Update(t.Context(), obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
