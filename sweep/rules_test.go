package sweep

import (
	"encoding/json"
	"log/slog"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/record"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// TestIndexAhead: a sweep lists the pods index beside the namespaces only
// for a rule that will be screened with it, as its last status tells.
func TestIndexAhead(t *testing.T) {
	pods := map[string]any{"name": "done", "condition": map[string]any{"type": "PODS_SUCCEED", "params": map[string]any{"podLabels": map[string]any{"app": "e2e"}}}, "action": map[string]any{"type": "DELETE"}}
	ttl := map[string]any{"name": "late", "condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(60)}}, "action": map[string]any{"type": "DELETE"}}
	ruleWith := func(namespace string, summary *status.RuleSummary, deactivated bool, policies ...any) cluster.Listed {
		spec := map[string]any{"namePatterns": []any{"e2e-*"}, "policies": policies}
		if deactivated {
			spec["deactivated"] = true
		}
		var st []byte
		if summary != nil {
			st, _ = json.Marshal(status.Status{Rule: summary})
		}
		return cluster.Listed{Status: st, Obj: &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "k8s.consol.de/v1beta1", "kind": "NamespaceManager",
			"metadata": map[string]any{"name": "leftovers", "namespace": namespace, "uid": "u", "generation": int64(1)},
			"spec":     spec,
		}}}
	}
	rule := func(namespace string, matched int, deactivated bool, policies ...any) cluster.Listed {
		var summary *status.RuleSummary
		if matched >= 0 {
			summary = &status.RuleSummary{Matched: matched, States: map[report.State]int{report.StateWaiting: matched}}
		}
		return ruleWith(namespace, summary, deactivated, policies...)
	}
	s := &Sweeper{cfg: Config{TrustedNamespaces: []string{"platform"}}}
	r := &sweepRun{status: record.StatusLocation{Subresource: true}}
	for _, tt := range []struct {
		name string
		rule cluster.Listed
		want bool
	}{
		{"matched many, checks pods", rule("platform", PodIndexAfter+1, false, ttl, pods), true},
		{"no status yet", rule("platform", -1, false, pods), false},
		{"matched few", rule("platform", PodIndexAfter, false, pods), false},
		{"no PODS_SUCCEED", rule("platform", 5000, false, ttl), false},
		{"paused", rule("platform", 5000, true, pods), false},
		{"not in a trusted namespace", rule("team-a", 5000, false, pods), false},
		{"invalid", rule("platform", 5000, false, map[string]any{"name": "broken"}), false},
		{"most governed", ruleWith("platform", &status.RuleSummary{Matched: 5000, States: map[report.State]int{report.StateGoverned: 4950, report.StateWaiting: 50}}, false, pods), false},
		{"states by shard, many waiting", ruleWith("platform", &status.RuleSummary{Matched: 5000, States: map[report.State]int{report.StateGoverned: 10, report.StateWaiting: 101}}, false, pods), true},
		{"no states yet", ruleWith("platform", &status.RuleSummary{Matched: PodIndexAfter + 1}, false, pods), true},
	} {
		if got := s.indexAhead(r, tt.rule); got != tt.want {
			t.Errorf("%s: indexAhead = %v, want %v", tt.name, got, tt.want)
		}
	}
	// Four shards: the one owning the rule evaluates about a quarter.
	s.cfg.ShardCount = 4
	if s.indexAhead(r, ruleWith("platform", &status.RuleSummary{Matched: 4 * PodIndexAfter}, false, pods)) {
		t.Errorf("4 shards, %d matched, no states: indexAhead = true, want false", 4*PodIndexAfter)
	}
}

// TestConfirmerAnswersForTheWholeChunk: a list made to check again the
// namespaces the index let pass answers for every namespace of the chunk
// (a namespace due by another policy, with a pod running, is not let
// pass), and a namespace outside the chunk is asked by itself.
func TestConfirmerAnswersForTheWholeChunk(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	running := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "busy", Name: "run", Labels: map[string]string{"app": "e2e"}}}
	elsewhere := running.DeepCopy()
	elsewhere.Namespace = "elsewhere"
	js, kube := newJobsServer(t)
	js.pods = []metav1.PartialObjectMetadata{*running, *elsewhere}
	s := &Sweeper{cfg: Config{PageSize: DefaultPageSize, ClaimTTL: DefaultClaimTTL}, log: slog.New(slog.DiscardHandler),
		clients: cluster.Clients{Metadata: metadatafake.NewSimpleMetadataClient(scheme, running, elsewhere), Kube: kube}}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.consol.de/v1beta1", "kind": "NamespaceManager",
		"metadata": map[string]any{"name": "leftovers", "namespace": "platform", "uid": "u", "generation": int64(1)},
		"spec": map[string]any{"namePatterns": []any{"*"}, "policies": []any{
			map[string]any{"name": "done", "condition": map[string]any{"type": "PODS_SUCCEED", "params": map[string]any{"podLabels": map[string]any{"app": "e2e"}}}, "action": map[string]any{"type": "DELETE"}},
		}},
	}}
	m, problems := policy.Parse(obj)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	index := newLabelIndex()
	r := &sweepRun{}
	check := s.confirmer(m, index, s.checks(r, false)).checks(t.Context(), []string{"a", "b", "c", "busy"}, 3)
	cond := m.Policies[0].Condition
	for ns, want := range map[string]int{"a": 0, "busy": 1, "elsewhere": 1} {
		got, err := check(t.Context(), ns, cond)
		if err != nil {
			t.Fatal(err)
		}
		if got.NotSucceeded != want {
			t.Errorf("%s: %+v, want %d not succeeded", ns, got, want)
		}
	}
}
