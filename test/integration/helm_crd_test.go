package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/nsman/nsman/deploy"
	"github.com/nsman/nsman/doctor"
	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/fixtures/original"
	"github.com/nsman/nsman/test/nsmantest"
)

// TestHelmUpgradesTheCRD follows docs/migrating.md's Helm path on a control
// plane of its own: the original operator's CRD, installed with kubectl
// apply, holds a manager; helm install refuses to take the CRD over unless
// told (--take-ownership); a chart of an older release installs its older
// nsman CRD in place of the original's, keeping the manager; over a CRD
// changed by hand helm upgrade stops at a field conflict, and with
// --force-conflicts brings the CRD to this chart's schema (nsman doctor says
// so, and a stage's final is kept); helm uninstall leaves the CRD and the
// managers.
func TestHelmUpgradesTheCRD(t *testing.T) {
	ctx, c := ownControlPlane(t, cluster.Options{Tier: cluster.APITier})
	t.Setenv("POD_NAMESPACE", "")
	kubectl := func(args ...string) {
		t.Helper()
		if out, err := exec.CommandContext(ctx, nsmantest.Kubectl(t), append(args, "--kubeconfig", c.Kubeconfig)...).CombinedOutput(); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	helm := func(args ...string) error {
		t.Helper()
		_, err := runHelm(ctx, t, append(args, "--kubeconfig", c.Kubeconfig)...)
		return err
	}
	dyn, err := dynamic.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	managers := dyn.Resource(nsmancluster.ManagerResource)

	// The original operator's install: its CRD, and a manager of its
	// example 01.
	kubectl("apply", "-f", original.Path(original.CRDFile))
	kubectl("wait", "--for=condition=Established", "crd/namespacemanagers.k8s.consol.de", "--timeout=60s")
	example := original.Path(original.ExamplesDir, "01-ttl-delete.yaml")
	kubectl("apply", "-f", example)
	before, err := managers.List(ctx, metav1.ListOptions{})
	if err != nil || len(before.Items) != 1 {
		t.Fatalf("the original's manager: %v, %d", err, len(before.Items))
	}
	home := before.Items[0].GetNamespace()

	// A chart of an older release: its CRD lacks stages and PODS_FAILED.
	older := filepath.Join(t.TempDir(), "nsman")
	if err := os.CopyFS(older, os.DirFS(filepath.Join(nsmantest.RepoRoot(), chartDir))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(older, "files", "namespacemanagers.k8s.consol.de.yaml"), staleCRD(t), 0o600); err != nil {
		t.Fatal(err)
	}
	install := []string{"install", chartRelease, older, "--namespace", installNamespace, "--create-namespace"}
	if err := helm(install...); err == nil || !strings.Contains(err.Error(), "exists and cannot be imported into the current release") {
		t.Fatalf("helm install over the original's CRD: %v, want it refused until --take-ownership", err)
	}
	if err := helm(append(install, "--take-ownership", "--force-conflicts")...); err != nil {
		t.Fatal(err)
	}
	r := runDoctor(t, c.Kubeconfig)
	r.want(t, "crd", doctor.Failed, "older than this nsman", "spec.policies[].final: pruned")

	// Someone changes a field of the CRD by hand: Helm 4 applies
	// server-side, so helm upgrade stops at the field another manager owns
	// until --force-conflicts, as docs/helm.md says.
	kubectl("patch", "crd", "namespacemanagers.k8s.consol.de", "--type", "merge", "-p", `{"spec":{"names":{"shortNames":["nsm"]}}}`)
	upgrade := []string{"upgrade", chartRelease, chartDir, "--namespace", installNamespace}
	if err := helm(upgrade...); err == nil || !strings.Contains(err.Error(), "conflict") {
		t.Fatalf("helm upgrade over a CRD changed by hand: %v, want a field conflict until --force-conflicts", err)
	}

	// helm upgrade to this chart: the CRD follows.
	if err := helm(append(upgrade, "--force-conflicts")...); err != nil {
		t.Fatal(err)
	}
	r = runDoctor(t, c.Kubeconfig)
	r.want(t, "crd", doctor.OK, "as this nsman")
	stage := managerObj(home, "stage", "crd", []any{map[string]any{
		"name": "warn after a day", "final": false,
		"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(86400)}},
		"action":    map[string]any{"type": "WEBHOOK", "params": map[string]any{"url": "https://hooks.example.com/warn"}},
	}})
	// The upgraded schema is served a moment after the upgrade.
	var got *unstructured.Unstructured
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_ = managers.Namespace(home).Delete(ctx, "stage", metav1.DeleteOptions{})
		if got, err = managers.Namespace(home).Create(ctx, stage, metav1.CreateOptions{}); err != nil {
			return false, nil
		}
		policies, _, _ := unstructured.NestedSlice(got.Object, "spec", "policies")
		_, kept := policies[0].(map[string]any)["final"]
		return kept, nil
	}); err != nil {
		t.Fatalf("a stage after helm upgrade: %v (last: %v), want final kept", err, got)
	}

	// The schema is the chart's exactly: nothing of the original's is
	// left behind (force took every field the original's kubectl apply
	// owned).
	crd, err := dyn.Resource(crdResource).Get(ctx, "namespacemanagers.k8s.consol.de", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var chartCRD map[string]any
	if err := yaml.Unmarshal(deploy.CRD, &chartCRD); err != nil {
		t.Fatal(err)
	}
	// The API server's default conversion, which the manifest leaves out.
	unstructured.RemoveNestedField(crd.Object, "spec", "conversion")
	if got, want := normalized(t, crd.Object["spec"]), normalized(t, chartCRD["spec"]); !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("the CRD's spec after helm upgrade:\n%s\nwant the chart's:\n%s", g, w)
	}

	// helm uninstall keeps the CRD and every manager.
	if err := helm("uninstall", chartRelease, "--namespace", installNamespace); err != nil {
		t.Fatal(err)
	}
	crd, err = dyn.Resource(crdResource).Get(ctx, "namespacemanagers.k8s.consol.de", metav1.GetOptions{})
	if err != nil || crd.GetDeletionTimestamp() != nil {
		t.Fatalf("the CRD after helm uninstall: %v, deletion %v: want it kept", err, crd.GetDeletionTimestamp())
	}
	after, err := managers.Namespace(home).List(ctx, metav1.ListOptions{})
	if err != nil || len(after.Items) != 2 {
		t.Fatalf("managers after helm uninstall: %v, %d, want the original's and the stage", err, len(after.Items))
	}
}

// normalized is v as JSON reads it back: numbers as float64, so that a
// YAML manifest and an API object compare.
func normalized(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
