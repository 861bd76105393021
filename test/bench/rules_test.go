package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/report"
)

// The rules benchmark (issue 13): one rule over n namespaces, in a control
// plane of its own.
const (
	// ruleLabel=on is what the rule selects namespaces by; the write
	// floor's namespaces say off.
	ruleLabel = "nsman.bench/rule"
	// rulesNamespace holds the rule; nsman runs with it trusted.
	rulesNamespace = "bench-rules"
	ruleName       = "bench"
	// rulePrefix names the namespaces the rule matches, also their set.
	rulePrefix = "rule"
	// ruleWriteFloorPrefix, with a round's number, names the namespaces
	// of that round's write floor, and their set.
	ruleWriteFloorPrefix = "rule-write-floor"
)

// ruleWriteFloorLabel is the label of the rule's write floor.
func ruleWriteFloorLabel(due int) string {
	return fmt.Sprintf("write floor: %d × (annotate, delete), %d workers", due, floorConcurrency)
}

// measureRules starts a control plane, seeds n namespaces a rule matches
// (half with a Running pod, half with one that never started) and, per
// round, due namespaces for the write floor, and measures, in order: nsman's
// first sweep, the read floor, a no-op sweep, then deleteRounds times over,
// with due of the Running namespaces made due, nsman's DELETE sweep and the
// write floor.
func measureRules(t *testing.T, bin string, n, due int) ([]measurement, string) {
	t.Helper()
	if deleteRounds*due > n/2 {
		t.Fatalf("rules: %d rounds of %d due namespaces need %d of the %d with a Running pod; want NSMAN_BENCH_DUE ≤ %d",
			deleteRounds, due, deleteRounds*due, n/2, n/2/deleteRounds)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Minute)
	defer cancel()
	s := startSession(ctx, t, bin, n)
	defer s.c.Stop()

	began := time.Now()
	// Odd namespaces hold a Running pod; even ones a pod that never
	// started, which PODS_SUCCEED waits on as long.
	phaseOf := func(i int) corev1.PodPhase {
		if i%2 == 0 {
			return corev1.PodPending
		}
		return corev1.PodRunning
	}
	if err := s.seed.namespaces(ctx, rulePrefix, map[string]string{setLabel: rulePrefix, ruleLabel: "on"}, n, phaseOf); err != nil {
		t.Fatalf("seed: %v", err)
	}
	succeeded := func(int) corev1.PodPhase { return corev1.PodSucceeded }
	for r := range deleteRounds {
		set := fmt.Sprintf("%s%d", ruleWriteFloorPrefix, r)
		if err := s.seed.namespaces(ctx, set, map[string]string{setLabel: set, ruleLabel: "off"}, due, succeeded); err != nil {
			t.Fatalf("seed %s: %v", set, err)
		}
	}
	if err := s.seed.namespace(ctx, rulesNamespace, nil); err != nil {
		t.Fatal(err)
	}
	rule, err := s.env.Dynamic.Resource(cluster.ManagerResource).Namespace(rulesNamespace).Create(ctx, ruleObject(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create rule: %v", err)
	}
	s.step("seeded %d namespaces, %d×%d for the write floor and the rule in %s", n, deleteRounds, due, time.Since(began).Round(time.Millisecond))

	trusted := []string{"--trusted-namespaces", rulesNamespace}
	if _, err := s.audit.next(ctx); err != nil {
		t.Fatal(err)
	}
	s.sweepRow("nsman sweep, first (records the rule's status)", trusted...)
	s.readRows("floor + paged LIST of pods not succeeded", func() (string, error) {
		pods, err := floorPodsList(ctx, s.sa)
		return fmt.Sprintf("%d pods", pods), err
	}, trusted...)

	key, ruleRef := status.PairAnnotation(rule.GetUID()), rulesNamespace+"/"+ruleName
	var dels, floors []measurement
	for r := range deleteRounds {
		// due namespaces with a Running pod become due: the pod succeeds,
		// as at the end of a test run.
		if err := inParallel(ctx, seedConcurrency, due, func(ctx context.Context, j int) error {
			return s.seed.setPodPhase(ctx, seededName(rulePrefix, 2*(r*due+j)+1), corev1.PodSucceeded)
		}); err != nil {
			t.Fatal(err)
		}
		m := s.measureSweep(deleteSweepLabel(due), trusted...)
		// The namespaces deleted in earlier rounds are terminating, which
		// no rule matches.
		if got, want := m.States[report.StateFired], due; got != want {
			t.Errorf("rule over %d: DELETE sweep %d fired %d, want %d (%v)", n, r, got, want, m.States)
		}
		if got, want := m.States[report.StateWaiting], n-(r+1)*due; got != want {
			t.Errorf("rule over %d: DELETE sweep %d left %d waiting, want %d (%v)", n, r, got, want, m.States)
		}
		dels = append(dels, m)

		targets, err := namespaceTargets(ctx, s.sa, fmt.Sprintf("%s%d", ruleWriteFloorPrefix, r))
		if err != nil {
			t.Fatal(err)
		}
		if len(targets) != due {
			t.Fatalf("rule write floor %d: %d namespaces listed, want %d", r, len(targets), due)
		}
		if _, err := s.audit.next(ctx); err != nil { // the list above is not the floor's
			t.Fatal(err)
		}
		start := time.Now()
		if err := ruleWriteFloor(ctx, s.sa, targets, key, ruleRef); err != nil {
			t.Fatal(err)
		}
		floors = append(floors, s.measured(measurement{What: ruleWriteFloorLabel(due), Wall: time.Since(start)}))
	}
	del, wf := median(dels), median(floors)
	s.rows = append(s.rows, del, wf)
	s.step("rule DELETE sweeps %s, write floors %s: medians %s and %s", walls(dels), walls(floors),
		del.Wall.Round(time.Millisecond), wf.Wall.Round(time.Millisecond))
	return s.rows, s.version
}

// ruleObject is the rule: in rulesNamespace, over the namespaces labelled
// ruleLabel=on, a TTL of a day, then PODS_SUCCEED, both to DELETE.
func ruleObject() *unstructured.Unstructured {
	return newManager(rulesNamespace, ruleName, map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{ruleLabel: "on"}},
		"policies":          []any{deletePolicy("ttl", ttlNotDue), deletePolicy("pods", podsRunning)},
	})
}

// ruleWriteFloor makes, per namespace and with nsman's concurrency, the
// writes of a rule's DELETE: the claim (a merge patch of the namespace,
// conditional on the listed resourceVersion, that sets the pair's
// annotation key to a record holding the claim) and the namespace delete
// with a UID precondition and background propagation.
func ruleWriteFloor(ctx context.Context, cfg *rest.Config, targets []writeTarget, key, rule string) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	expires := time.Now().UTC().Add(time.Minute)
	return parallel(ctx, len(targets), func(ctx context.Context, i int) error {
		t := targets[i]
		record, err := json.Marshal(status.PairStatus{Rule: rule, Progress: status.Progress{Claim: &status.Claim{
			Policy: "pods", Action: policy.ActionDelete, Sweep: "write-floor", Expires: expires, Generation: 1, TargetUID: t.uid,
		}}})
		if err != nil {
			return err
		}
		claim, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": t.resourceVersion,
			"annotations":     map[string]string{key: string(record)},
		}})
		if err != nil {
			return err
		}
		if _, err := kube.CoreV1().Namespaces().Patch(ctx, t.name, types.MergePatchType, claim, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("claim namespace %s: %w", t.name, err)
		}
		return deleteNamespace(ctx, kube, t)
	})
}
