package robust

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/probe"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestRuleAtScaleUnderAPIFaults: a rule over more than PodIndexAfter
// namespaces is screened with the sweep's index of pods that have not
// succeeded, and the checks the index lets pass are confirmed with
// cluster-wide lists, or namespace by namespace when a list fails. Through
// an API server connection that fails about one request in ten (at least
// one, as the proxy counts them), that path acts on no namespace with a
// Running pod, and a clean sweep after it converges with each namespace
// whose pods all succeeded told once (one Idempotency-Key).
func TestRuleAtScaleUnderAPIFaults(t *testing.T) {
	began := time.Now()
	e := setup(t)
	bin := buildNsman(t)
	recv := nsmantest.NewReceiver(t)
	ctx := t.Context()
	const run, due = "rule-scale", 40
	e2e := map[string]string{"app": "e2e"}
	var passing, running []string
	for i := range probe.PodIndexAfter + due {
		ns := shared.Namespace(t)
		patch := []byte(`{"metadata":{"labels":{"nsman.test/rule":"` + run + `"}}}`)
		if _, err := shared.Admin.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		phase := corev1.PodRunning
		if i < due {
			phase = corev1.PodSucceeded
			passing = append(passing, ns)
		} else {
			running = append(running, ns)
		}
		nsmantest.PodWithPhase(t, shared.Admin, ns, "test", e2e, phase)
	}
	rule := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.consol.de/v1beta1",
		"kind":       "NamespaceManager",
		"metadata":   map[string]any{"namespace": ruleHome, "name": run, "labels": map[string]any{"nsman.test/crash": run}},
		"spec": map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"nsman.test/rule": run}},
			"policies": []any{map[string]any{
				"name":      "tests passed",
				"condition": map[string]any{"type": "PODS_SUCCEED", "params": map[string]any{"initialDelaySeconds": int64(0), "podLabels": map[string]any{"app": "e2e"}}},
				"action":    map[string]any{"type": "WEBHOOK", "params": map[string]any{"url": recv.URL + "/" + run}},
			}},
		},
	}}
	ensureRuleHome(t)
	created, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ruleHome).Create(ctx, rule, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	faults := faultySweep(t, e, bin, run, 13)

	// Claims left by writes whose answers were lost expire after 20s.
	time.Sleep(21 * time.Second)
	res := e.Sweep(t, "-l", "nsman.test/crash="+run)
	if res.Code != 0 {
		t.Fatalf("clean sweep: exit %d\n%s", res.Code, res.Stderr)
	}
	keys := map[string]map[string]bool{}
	for _, d := range recv.Deliveries() {
		var body struct{ Namespace string }
		if d.Path != "/"+run || json.Unmarshal(d.Body, &body) != nil {
			continue
		}
		if keys[body.Namespace] == nil {
			keys[body.Namespace] = map[string]bool{}
		}
		keys[body.Namespace][d.Header.Get("Idempotency-Key")] = true
	}
	record := func(ns string) (status.PairStatus, bool) {
		obj, err := shared.Admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		raw, ok := obj.Annotations[status.PairAnnotation(created.GetUID())]
		var st status.PairStatus
		if ok && json.Unmarshal([]byte(raw), &st) != nil {
			t.Errorf("record on %s does not decode: %s", ns, raw)
		}
		return st, ok
	}
	for _, ns := range passing {
		if len(keys[ns]) != 1 {
			t.Errorf("namespace %s, whose pods all succeeded, told under keys %v, want exactly one", ns, keys[ns])
		}
		if st, _ := record(ns); st.LastAction == nil || st.LastAction.Result != report.ResultSucceeded || st.Claim != nil {
			t.Errorf("namespace %s not converged: record %+v", ns, st)
		}
	}
	for _, ns := range running {
		if len(keys[ns]) != 0 {
			t.Errorf("namespace %s, with a Running pod, told under keys %v", ns, keys[ns])
		}
		if st, ok := record(ns); ok && (st.LastAction != nil || st.Claim != nil) {
			t.Errorf("namespace %s, with a Running pod, acted on: record %+v", ns, st)
		}
		if p := res.Pair(t, ruleHome, run, ns); p.State != report.StateWaiting {
			t.Errorf("clean sweep, %s: %s (%s), want waiting", ns, p.State, p.Message)
		}
	}
	// A webhook whose answer was lost is re-sent under the same key, as it
	// must be; another key for the same namespace is a duplicate.
	duplicates := 0
	for _, k := range keys {
		duplicates += len(k) - 1
	}
	nsmantest.Figures{Runs: 2, Faults: faults, Actions: len(keys), Duplicates: duplicates, Began: began}.Log(t)
}
