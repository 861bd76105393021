package traffic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestTrafficExamplePlaysOut plays examples/sleep-idle-traffic.yaml out,
// its idle time made idleSeconds, with ingress-nginx's counter scraped by
// a real Prometheus as a ServiceMonitor scrapes the controller: while
// requests come the preview stays awake, once they stop it sleeps, and a
// request to it asleep (ingress-nginx counts the 503 it answers) wakes it
// as it was.
func TestTrafficExamplePlaysOut(t *testing.T) {
	setup(t)
	objs := nsmantest.Example(t, "sleep-idle-traffic.yaml")
	run := fmt.Sprintf("traffic-run-%d", time.Now().UnixNano())
	var rule *unstructured.Unstructured
	var manifest bytes.Buffer
	for _, obj := range objs {
		if obj.GetKind() == policy.Kind {
			rule = obj
			obj.SetLabels(map[string]string{nsmantest.PlayOutLabel: run})
			policies, _, _ := unstructured.NestedSlice(obj.Object, "spec", "policies")
			for _, p := range policies {
				_ = unstructured.SetNestedField(p.(map[string]any), int64(idleSeconds), "condition", "params", "idleSeconds")
			}
			_ = unstructured.SetNestedSlice(obj.Object, policies, "spec", "policies")
		}
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		manifest.Write(append(b, '\n'))
	}
	if rule == nil {
		t.Fatal("the example has no rule")
	}
	env.Apply(t, manifest.Bytes())
	const preview, workload = "demo-preview-traffic-4711", "storefront"

	controller := nsmantest.StartTraffic(t)
	prom := nsmantest.RunPrometheus(t, nsmantest.ScrapeJob{Name: "ingress-nginx", Targets: []string{controller.Addr}, Labels: map[string]string{"namespace": "ingress-nginx"}})
	args := []string{"-l", nsmantest.PlayOutLabel + "=" + run, "--trusted-namespaces", rule.GetNamespace(), "--prometheus-url", prom.URL}
	pairUntil := func(what string, done func(report.Entry) bool) report.Entry {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			res := env.Sweep(t, args...)
			e := res.Pair(t, rule.GetNamespace(), rule.GetName(), preview)
			if done(e) {
				return e
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a minute: %s: %s (traffic %+v); stderr:\n%s", what, e.State, e.Message, e.Traffic, res.Stderr)
			}
			time.Sleep(time.Second)
		}
	}

	stop := every(t, func() { controller.Requests(preview, 1) })
	time.Sleep((idleSeconds + 1) * time.Second) // idle by everything but its requests
	used := pairUntil("awake on its requests", func(e report.Entry) bool {
		return e.Traffic != nil && e.Traffic.Requests != nil && *e.Traffic.Requests > 0
	})
	if used.State != report.StateWaiting || replicasOf(t, preview, workload) != 2 {
		t.Errorf("with requests: %s: %q, %d replicas; want it awake", used.State, used.Message, replicasOf(t, preview, workload))
	}
	stop()
	slept := pairUntil("asleep once unused", func(e report.Entry) bool { return e.State == report.StateFired })
	if slept.Woke || !strings.Contains(slept.Message, "no requests in the last 6s (traffic: preset ingress-nginx)") || replicasOf(t, preview, workload) != 0 {
		t.Errorf("unused: woke %v, %q, %d replicas; want it asleep, having seen no requests", slept.Woke, slept.Message, replicasOf(t, preview, workload))
	}
	controller.Requests(preview, 1) // answered 503 by ingress-nginx, counted all the same
	woke := pairUntil("woken by a request", func(e report.Entry) bool { return e.State == report.StateFired && e.Woke })
	if got := replicasOf(t, preview, workload); got != 2 {
		t.Errorf("woken by a request (%q): %d replicas, want the 2 it had", woke.Message, got)
	}
}
