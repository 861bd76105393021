package integration

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/policy/patch"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// sleepExamples are the examples whose rules sleep: TestSleepExamplesPlayOut
// plays them out, TestExamplesPlayOut leaves them to it.
var sleepExamples = []string{"sleep-idle-previews.yaml", "sleep-nights-weekends.yaml", "sleep-nights-one-replica.yaml", "sleep-nights-flux-suspend.yaml"}

// workloadLine is what a sleep and a wake change of a Deployment or
// CronJob, as one line.
func workloadLine(t *testing.T, kind, ns, name string) string {
	t.Helper()
	switch kind {
	case "Deployment":
		d, err := shared.Admin.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, recorded := d.Annotations[status.ReplicasAnnotation]
		return fmt.Sprintf("Deployment %s/%s replicas %d recorded %t", ns, name, *d.Spec.Replicas, recorded)
	case "CronJob":
		cj, err := shared.Admin.BatchV1().CronJobs(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, recorded := cj.Annotations[status.SuspendAnnotation]
		return fmt.Sprintf("CronJob %s/%s suspend %t recorded %t", ns, name, cj.Spec.Suspend != nil && *cj.Spec.Suspend, recorded)
	case "Service":
		svc := service(t, ns, name)
		_, recorded := svc.Annotations[status.LoadBalancerAnnotation]
		return fmt.Sprintf("Service %s/%s type %s recorded %t", ns, name, svc.Spec.Type, recorded)
	case "HelmRelease":
		hr := helmRelease(t, ns, name)
		suspend, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend")
		_, recorded := hr.GetAnnotations()[status.PatchedAnnotation]
		return fmt.Sprintf("HelmRelease %s/%s suspend %t recorded %t", ns, name, suspend, recorded)
	}
	t.Fatalf("no workload line for kind %s", kind)
	return ""
}

// TestSleepExamplesPlayOut plays out each example whose rule sleeps: its
// SLEEP policy made to hold now (windows open now, idle times of seconds;
// its other policies as written, which do not fire in the test), each
// namespace the rule matches is put to sleep (every workload but those
// labelled keep-awake, suspended before or at or below the replicas the
// policy keeps), stays asleep at the next sweep, and is woken as it was,
// by its window closing or by nsman touch.
func TestSleepExamplesPlayOut(t *testing.T) {
	e := setup(t)
	for _, name := range sleepExamples {
		t.Run(name, func(t *testing.T) {
			objs := nsmantest.Example(t, name)
			if slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "HelmRelease" }) {
				// Flux's CRDs, and what deploy/components/flux-suspend grants.
				nsmantest.InstallGitOpsCRDs(t, e.Dynamic)
				grantNsman(t, "nsman-example-patch", rbacv1.PolicyRule{APIGroups: []string{nsmantest.HelmReleaseResource.Group}, Resources: []string{nsmantest.HelmReleaseResource.Resource}, Verbs: []string{"list", "patch"}})
			}
			playOutSleep(t, e, objs)
		})
	}
}

func playOutSleep(t *testing.T, e *nsmantest.Env, objs []*unstructured.Unstructured) {
	t.Helper()
	run := fmt.Sprintf("sleep-run-%d", time.Now().UnixNano())
	var rule *unstructured.Unstructured
	var m policy.Manager
	var workloads []*unstructured.Unstructured
	for _, obj := range objs {
		switch obj.GetKind() {
		case policy.Kind:
			rule = obj
			holdsNow(t, obj)
			obj.SetLabels(map[string]string{nsmantest.PlayOutLabel: run})
			var problems []error
			if m, problems = parseRule(obj); len(problems) > 0 {
				t.Fatalf("rule %s invalid: %v", obj.GetName(), problems)
			}
		case "Deployment", "CronJob", "Service", "HelmRelease":
			workloads = append(workloads, obj)
		}
	}
	var targets []string
	for _, obj := range objs {
		if obj.GetKind() == "Namespace" && obj.GetName() != m.Namespace && m.Rule.Matches(obj.GetName(), k8slabels.Set(obj.GetLabels())) {
			targets = append(targets, obj.GetName())
		}
	}
	if rule == nil || len(targets) == 0 || len(workloads) == 0 {
		t.Fatalf("the example has no rule, no namespace it matches or no workload")
	}
	e.ApplyObjects(t, objs)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Dynamic.Resource(cluster.ManagerResource).Namespace(m.Namespace).Delete(ctx, m.Name, metav1.DeleteOptions{})
	})
	awake := map[string]string{}
	for _, w := range workloads {
		awake[w.GetKind()+" "+w.GetNamespace()+"/"+w.GetName()] = workloadLine(t, w.GetKind(), w.GetNamespace(), w.GetName())
	}
	args := []string{"-l", nsmantest.PlayOutLabel + "=" + run, "--trusted-namespaces", m.Namespace}
	sweepUntil := func(want report.State) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			res := e.Sweep(t, args...)
			wantCode(t, res, 0)
			states := map[report.State]int{}
			for _, ns := range targets {
				states[res.Pair(t, m.Namespace, m.Name, ns).State]++
			}
			if states[want] == len(targets) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after a minute, the rule's namespaces are %v, want all %s", states, want)
			}
			time.Sleep(time.Second)
		}
	}

	// What the rule's first SLEEP policy sleeps to.
	var to policy.SleepTo
	if i := slices.IndexFunc(m.Policies, func(p policy.Policy) bool { return p.Action.Type == policy.ActionSleep }); i >= 0 {
		to = m.Policies[i].Action.SleepTo
	}
	sweepUntil(report.StateFired)
	for _, w := range workloads {
		id := w.GetKind() + " " + w.GetNamespace() + "/" + w.GetName()
		got := workloadLine(t, w.GetKind(), w.GetNamespace(), w.GetName())
		replicas, found, _ := unstructured.NestedInt64(w.Object, "spec", "replicas")
		atOrBelow := w.GetKind() == "Deployment" && (found && replicas <= to.Replicas || !found && to.Replicas >= 1)
		unpicked := w.GetKind() == "Service" && !to.LoadBalancers || w.GetKind() == "HelmRelease" && !slices.ContainsFunc(to.Patches, func(p patch.Patch) bool {
			return p.Kind == w.GetKind() && k8slabels.SelectorFromSet(p.Labels).Matches(k8slabels.Set(w.GetLabels()))
		})
		untouched := w.GetLabels()[status.KeepAwakeLabel] == "true" || strings.Contains(awake[id], "suspend true") || atOrBelow || unpicked
		asleep := strings.Contains(got, fmt.Sprintf("replicas %d recorded true", to.Replicas)) || strings.Contains(got, "suspend true recorded true") || strings.Contains(got, "type ClusterIP recorded true")
		if untouched && got != awake[id] || !untouched && !asleep {
			t.Errorf("asleep: %s; was %s (left alone: %t)", got, awake[id], untouched)
		}
	}
	sweepUntil(report.StateAsleep)

	if slices.ContainsFunc(m.Policies, func(p policy.Policy) bool { return p.Action.Type == policy.ActionSleep && len(p.Windows) > 0 }) {
		closeWindows(t, e, rule)
	} else {
		for _, ns := range targets {
			var out bytes.Buffer
			if code := cmd.Execute(t.Context(), []string{"touch", "--kubeconfig", shared.Kubeconfig, ns}, &out, &out); code != 0 {
				t.Fatalf("nsman touch %s: exit %d: %s", ns, code, out.String())
			}
		}
	}
	sweepUntil(report.StateFired)
	for _, w := range workloads {
		id := w.GetKind() + " " + w.GetNamespace() + "/" + w.GetName()
		if got := workloadLine(t, w.GetKind(), w.GetNamespace(), w.GetName()); got != awake[id] {
			t.Errorf("woken: %s, want %s as before", got, awake[id])
		}
	}
}

// holdsNow makes a rule's SLEEP policies hold now: windows open now (of
// dates, yesterday to tomorrow all day, when the example has a window of
// dates, so that a sweep sleeps by dates), idle times of two seconds. Its
// other policies are left as written.
func holdsNow(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	policies, _, _ := unstructured.NestedSlice(obj.Object, "spec", "policies")
	for _, p := range policies {
		pm := p.(map[string]any)
		if typ, _, _ := unstructured.NestedString(pm, "action", "type"); typ != policy.ActionSleep {
			continue
		}
		if _, ok := pm["windows"]; ok {
			now := time.Now().UTC()
			pm["windows"] = []any{map[string]any{"from": now.Add(-time.Hour).Format("15:04"), "to": now.Add(2 * time.Hour).Format("15:04")}}
			if hasDates(pm) {
				pm["windows"] = []any{map[string]any{"dates": []any{now.AddDate(0, 0, -1).Format(time.DateOnly) + ".." + now.AddDate(0, 0, 1).Format(time.DateOnly)}}}
			}
		}
		if typ, _, _ := unstructured.NestedString(pm, "condition", "type"); typ == policy.ConditionIdle {
			_ = unstructured.SetNestedField(pm, int64(2), "condition", "params", "idleSeconds")
		}
	}
	_ = unstructured.SetNestedSlice(obj.Object, policies, "spec", "policies")
}

// hasDates says whether one of a policy's windows has dates.
func hasDates(pm map[string]any) bool {
	windows, _ := pm["windows"].([]any)
	for _, w := range windows {
		if wm, ok := w.(map[string]any); ok && wm["dates"] != nil {
			return true
		}
	}
	return false
}

// closeWindows moves the rule's SLEEP windows away from now (a window of
// dates to three days ahead).
func closeWindows(t *testing.T, e *nsmantest.Env, obj *unstructured.Unstructured) {
	t.Helper()
	live, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(obj.GetNamespace()).Get(t.Context(), obj.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	policies, _, _ := unstructured.NestedSlice(live.Object, "spec", "policies")
	now := time.Now().UTC()
	for _, p := range policies {
		if pm := p.(map[string]any); pm["windows"] != nil {
			later := map[string]any{"from": now.Add(3 * time.Hour).Format("15:04"), "to": now.Add(4 * time.Hour).Format("15:04")}
			if hasDates(pm) {
				later = map[string]any{"dates": []any{now.AddDate(0, 0, 3).Format(time.DateOnly)}}
			}
			pm["windows"] = []any{later}
		}
	}
	_ = unstructured.SetNestedSlice(live.Object, policies, "spec", "policies")
	if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(obj.GetNamespace()).Update(t.Context(), live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// parseRule is policy.Parse, its problems as errors.
func parseRule(obj *unstructured.Unstructured) (policy.Manager, []error) {
	m, problems := policy.Parse(obj)
	var errs []error
	for _, p := range problems {
		errs = append(errs, p)
	}
	if m.Rule == nil {
		errs = append(errs, fmt.Errorf("%s is no rule", obj.GetName()))
	}
	return m, errs
}
