package integration

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	nsmanwrite "github.com/nsman/nsman/internal/write"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/nsmantest"
)

// suspendWeb is the patch of a sleep that suspends the HelmReleases
// labelled app=web.
var suspendWeb = map[string]any{"kind": "HelmRelease.helm.toolkit.fluxcd.io", "labels": map[string]any{"app": "web"},
	"patch": map[string]any{"spec": map[string]any{"suspend": true}}}

// sleepPatching is sleepPolicy(from, to) suspending the HelmReleases
// labelled app=web (params.patches) beside the workloads.
func sleepPatching(from, to time.Duration) map[string]any {
	p := sleepPolicy(from, to)
	p["action"] = map[string]any{"type": "SLEEP", "params": map[string]any{"patches": []any{suspendWeb}}}
	return p
}

// onHelmReleases sets t up to patch HelmReleases: Flux's CRDs installed,
// and nsman's ServiceAccount granted to list and patch them, as
// deploy/components/flux-suspend grants (the shared fence lets it change
// their spec.suspend). It returns the trusted namespace for t's managers
// and the namespace they put to sleep.
func onHelmReleases(t *testing.T) (home, ns string) {
	t.Helper()
	nsmantest.InstallGitOpsCRDs(t, env.Dynamic)
	home, ns = shared.Namespace(t), shared.Namespace(t)
	grantNsman(t, "nsman-patch-"+ns, rbacv1.PolicyRule{APIGroups: []string{nsmantest.HelmReleaseResource.Group}, Resources: []string{nsmantest.HelmReleaseResource.Resource}, Verbs: []string{"list", "patch"}})
	return home, ns
}

// createRelease creates HelmRelease name in ns labelled app=app.
func createRelease(t *testing.T, ns, name, app string) {
	t.Helper()
	obj := nsmantest.OwnerObject(ownerKind(t, "HelmRelease"), ns, name)
	obj.SetLabels(map[string]string{"app": app})
	if _, err := env.Dynamic.Resource(nsmantest.HelmReleaseResource).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// release is HelmRelease name of ns as it is now.
func helmRelease(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := env.Dynamic.Resource(nsmantest.HelmReleaseResource).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// wantSuspended fails unless HelmRelease name of ns is suspended, with a
// record whose inverse is inverse, or, with suspended false, is as its
// suspend field says (nil: none) with no record.
func wantRelease(t *testing.T, ns, name string, suspend any, inverse map[string]any) {
	t.Helper()
	obj := helmRelease(t, ns, name)
	got, has, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "suspend")
	if !has {
		got = nil
	}
	raw, recorded := obj.GetAnnotations()[status.PatchedAnnotation]
	var rec struct{ Patch, Inverse map[string]any }
	_ = json.Unmarshal([]byte(raw), &rec)
	if got != suspend || recorded != (inverse != nil) || inverse != nil && !reflect.DeepEqual(rec.Inverse, inverse) {
		t.Errorf("HelmRelease %s: spec.suspend %v, record %q; want %v, record inverse %v", name, got, raw, suspend, inverse)
	}
}

// releaseWrites counts nsman's writes to HelmRelease name of ns that the
// API server applied.
func releaseWrites(t *testing.T, ns, name string) int {
	t.Helper()
	n := 0
	for _, w := range env.Writes(t) {
		if w.Namespace == ns && w.Resource == nsmantest.HelmReleaseResource.Resource && w.Name == name && w.Code == 200 {
			n++
		}
	}
	return n
}

// later moves manager home/name's window to later today: what kept its
// namespace asleep no longer holds.
func later(t *testing.T, home, name string, policy map[string]any) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"policies":[%s]}}`, nsmanwrite.MustJSON(policy))
	if _, err := env.Dynamic.Resource(cluster.ManagerResource).Namespace(home).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A SLEEP with patches, of a manager in a trusted namespace, suspends the
// HelmRelease its labels pick, in one request with the record, beside the
// Deployment it scales, and leaves the other; a sweep while asleep writes
// nothing; one changed back by hand while asleep is suspended again, its
// record the state it was changed to, naming who changed it; the wake
// brings that state back and drops the record.
func TestSleepPatchesSuspendHelmReleases(t *testing.T) {
	e := setup(t)
	home, ns := onHelmReleases(t)
	createRelease(t, ns, "web", "web")
	createRelease(t, ns, "db", "db")
	createDeployment(t, ns, "api", 2)
	createManager(t, managerObj(home, "nights", ns, []any{sleepPatching(-time.Hour, 2*time.Hour)}, targeting(ns)))
	sweep := func() nsmantest.Result {
		res := e.Sweep(t, "--trusted-namespaces", home, "-l", caseLabel+"="+ns)
		wantCode(t, res, 0)
		return res
	}

	slept := wantState(t, sweep(), home, "nights", report.StateFired)
	if !slices.Contains(slept.Effects, "patch HelmRelease/web") || slices.ContainsFunc(slept.Effects, func(e string) bool { return strings.Contains(e, "HelmRelease/db") }) {
		t.Errorf("effects %q: want HelmRelease/web patched, and db not", slept.Effects)
	}
	wantRelease(t, ns, "web", true, map[string]any{"spec": map[string]any{"suspend": nil}})
	wantRelease(t, ns, "db", nil, nil)
	wantWorkload(t, ns, "api", 0, "2")

	wantState(t, sweep(), home, "nights", report.StateAsleep)
	if n := releaseWrites(t, ns, "web"); n != 1 {
		t.Errorf("%d writes to HelmRelease/web, want the one patch", n)
	}

	if _, err := env.Dynamic.Resource(nsmantest.HelmReleaseResource).Namespace(ns).Patch(t.Context(), "web", types.MergePatchType, []byte(`{"spec":{"suspend":false}}`), metav1.PatchOptions{FieldManager: "by-hand"}); err != nil {
		t.Fatal(err)
	}
	back := wantState(t, sweep(), home, "nights", report.StateFired)
	if back.Woke || !slices.Contains(back.Undone, "by-hand: HelmRelease/web") || !slices.Contains(back.Effects, "patch HelmRelease/web") {
		t.Errorf("entry %+v: want HelmRelease/web suspended again, naming by-hand", back)
	}
	wantRelease(t, ns, "web", true, map[string]any{"spec": map[string]any{"suspend": false}})

	later(t, home, "nights", sleepPatching(3*time.Hour, 4*time.Hour))
	woke := wantState(t, sweep(), home, "nights", report.StateFired)
	if !woke.Woke || !slices.Contains(woke.Effects, "unpatch HelmRelease/web") {
		t.Errorf("entry woke %t, effects %q; want HelmRelease/web unpatched", woke.Woke, woke.Effects)
	}
	wantRelease(t, ns, "web", false, nil)
	wantRelease(t, ns, "db", nil, nil)
	wantWorkload(t, ns, "api", 2, "")
}

// Four sweeps at once patch the HelmRelease once, its record the state it
// had (no sweep records the suspend another left), and four at once
// unpatch it once.
func TestSleepPatchOnceUnderConcurrentSweeps(t *testing.T) {
	setup(t)
	home, ns := onHelmReleases(t)
	createRelease(t, ns, "web", "web")
	createManager(t, managerObj(home, "nights", ns, []any{sleepPatching(-time.Hour, 2*time.Hour)}, targeting(ns)))
	if n := sweepsAtOnce(t, ns, "--trusted-namespaces", home); n != 1 {
		t.Errorf("%d sweeps put it to sleep, want 1", n)
	}
	wantRelease(t, ns, "web", true, map[string]any{"spec": map[string]any{"suspend": nil}})
	later(t, home, "nights", sleepPatching(3*time.Hour, 4*time.Hour))
	if n := sweepsAtOnce(t, ns, "--trusted-namespaces", home); n != 1 {
		t.Errorf("%d sweeps woke it, want 1", n)
	}
	wantRelease(t, ns, "web", nil, nil)
	if n := releaseWrites(t, ns, "web"); n != 2 {
		t.Errorf("%d writes to HelmRelease/web applied, want the patch and its inverse", n)
	}
}

// A SCALE_DOWN with patches suspends the HelmRelease, and nsman restore,
// which knows no policy, brings it back from its record.
func TestScaleDownPatchesRestores(t *testing.T) {
	e := setup(t)
	home, ns := onHelmReleases(t)
	createRelease(t, ns, "web", "web")
	createManager(t, managerObj(home, "once", ns, []any{ttlPolicy("scale at once", 0, map[string]any{"type": "SCALE_DOWN", "params": map[string]any{"patches": []any{suspendWeb}}})}, targeting(ns)))
	res := e.Sweep(t, "--trusted-namespaces", home, "-l", caseLabel+"="+ns)
	wantCode(t, res, 0)
	wantState(t, res, home, "once", report.StateFired)
	wantRelease(t, ns, "web", true, map[string]any{"spec": map[string]any{"suspend": nil}})

	out, code := runRestore(t, ns)
	if code != 0 || !strings.Contains(out, "unpatch HelmRelease/web") {
		t.Fatalf("nsman restore -n %s: exit %d\n%s", ns, code, out)
	}
	wantRelease(t, ns, "web", nil, nil)
}
