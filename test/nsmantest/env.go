package nsmantest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/nsman/nsman/cmd"
	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
)

// Namespace and name of the ServiceAccount nsman runs as (deploy/base/rbac.yaml).
const (
	ServiceAccountNamespace = "namespace-manager"
	ServiceAccountName      = "nsman"
)

// RunInOwnNamespace makes the nsman of the tests run as deploy/'s CronJob
// does, in ServiceAccountNamespace, which $POD_NAMESPACE names: the one
// namespace a sweep trusts by default. A TestMain calls it before any test;
// a test of nsman outside a pod sets $POD_NAMESPACE empty (t.Setenv).
func RunInOwnNamespace() {
	if _, set := os.LookupEnv("POD_NAMESPACE"); !set {
		_ = os.Setenv("POD_NAMESPACE", ServiceAccountNamespace)
	}
}

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// CRD is nsman's CRD manifest, deploy/base/crd.yaml.
func CRD(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(), "deploy", "base", "crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Env is a control plane prepared for nsman.
type Env struct {
	Cluster *cluster.Cluster
	Dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	// Kubeconfig acts as nsman's ServiceAccount.
	Kubeconfig string
	// User is that ServiceAccount's user name in the audit log.
	User string
}

// NewEnv is an Env of c that installs nothing: Apply works, Sweep does
// not (no ServiceAccount yet).
func NewEnv(c *cluster.Cluster) (*Env, error) {
	dyn, err := dynamic.NewForConfig(c.AdminConfig)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(c.AdminConfig)
	if err != nil {
		return nil, err
	}
	return &Env{Cluster: c, Dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))}, nil
}

// Setup installs the CRD manifest at crdPath, nsman's deploy/ RBAC and its
// admission policy, and prepares a kubeconfig for nsman's ServiceAccount:
// every sweep as that ServiceAccount runs under the policy. The policy's
// configuredPatchable is deploy/components/flux-suspend's, as on a
// platform that applied that component: a sleep's params.patches of
// HelmReleases' and Kustomizations' spec.suspend passes the fence, so
// that the tests of such sleeps run under it (each grants the patch
// itself: the RBAC stays deploy/base's, which the tests of what nsman may
// read hold it to). A test of the base's default renders the base file.
func Setup(ctx context.Context, c *cluster.Cluster, crd []byte) (*Env, error) {
	e, err := NewEnv(c)
	if err != nil {
		return nil, err
	}
	e.User = cluster.ServiceAccountUser(ServiceAccountNamespace, ServiceAccountName)
	if err := e.apply(ctx, crd); err != nil {
		return nil, fmt.Errorf("install CRD: %w", err)
	}
	for _, f := range []string{"namespace.yaml", "rbac.yaml", "admission-policy.yaml"} {
		data, err := os.ReadFile(filepath.Join(RepoRoot(), "deploy", "base", f))
		if err != nil {
			return nil, err
		}
		objs, err := Decode(data)
		if err != nil {
			return nil, fmt.Errorf("deploy/base/%s: %w", f, err)
		}
		if f == "admission-policy.yaml" {
			if err := withFluxSuspend(objs); err != nil {
				return nil, err
			}
		}
		if err := e.applyObjects(ctx, objs); err != nil {
			return nil, fmt.Errorf("apply deploy/base/%s: %w", f, err)
		}
	}
	cfg, err := c.ServiceAccountConfig(ctx, ServiceAccountNamespace, ServiceAccountName)
	if err != nil {
		return nil, err
	}
	e.Kubeconfig = filepath.Join(c.Dir, "nsman-sa.kubeconfig")
	if err := cluster.WriteKubeconfig(e.Kubeconfig, cfg); err != nil {
		return nil, err
	}
	// The CRD is served and the RBAC grant effective once a list as nsman
	// succeeds.
	saDyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := saDyn.Resource(nsmancluster.ManagerResource).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("NamespaceManagers not listable as nsman: %w", err)
	}
	if err := waitForAdmissionPolicy(ctx, cfg); err != nil {
		return nil, err
	}
	return e, nil
}

// AdmissionPolicy names the ValidatingAdmissionPolicy of
// deploy/base/admission-policy.yaml, which its refusals name.
const AdmissionPolicy = "ValidatingAdmissionPolicy 'nsman'"

// waitForAdmissionPolicy waits until the admission policy, which the API
// server loads a moment after it is created, refuses nsman's ServiceAccount
// (cfg) what it must: a DELETE of nsman's own namespace. The DELETE is a dry
// run, so that it changes nothing while the policy is not yet in force.
func waitForAdmissionPolicy(ctx context.Context, cfg *rest.Config) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = kube.CoreV1().Namespaces().Delete(ctx, ServiceAccountNamespace, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(last) && strings.Contains(last.Error(), AdmissionPolicy), nil
	})
	if err != nil {
		return fmt.Errorf("the admission policy does not refuse nsman a DELETE of namespace %s (last answer: %v): %w", ServiceAccountNamespace, last, err)
	}
	return nil
}

// Apply creates or replaces every object in a multi-document manifest.
func (e *Env) Apply(t testing.TB, manifest []byte) {
	t.Helper()
	if err := e.apply(t.Context(), manifest); err != nil {
		t.Fatal(err)
	}
}

// ApplyObjects applies objs, as Apply a manifest of them.
func (e *Env) ApplyObjects(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	if err := e.applyObjects(t.Context(), objs); err != nil {
		t.Fatal(err)
	}
}

func (e *Env) apply(ctx context.Context, manifest []byte) error {
	objs, err := Decode(manifest)
	if err != nil {
		return err
	}
	return e.applyObjects(ctx, objs)
}

func (e *Env) applyObjects(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		if err := e.applyOne(ctx, obj); err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

func (e *Env) applyOne(ctx context.Context, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	var mapping *meta.RESTMapping
	// A CRD applied just before is served after a moment.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		var err error
		mapping, err = e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			e.mapper.Reset()
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("no resource for %s", gvk)
	}
	var client dynamic.ResourceInterface = e.Dynamic.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		client = e.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace())
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	force := true
	_, err = client.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "nsman-test", Force: &force})
	return err
}

// Example is the objects of examples/name in the repository.
func Example(t testing.TB, name string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(), "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(data)
	if err != nil {
		t.Fatalf("examples/%s: %v", name, err)
	}
	return objs
}

// Decode splits a multi-document YAML or JSON manifest into objects, with
// whole numbers as int64 as the API machinery has them.
func Decode(manifest []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
}

// Result is what one nsman sweep printed and returned.
type Result struct {
	Report report.Report
	Code   int
	Stdout string // the report as printed
	Stderr string
}

// Entry returns the report entry of manager namespace/name.
func (r Result) Entry(t testing.TB, namespace, name string) report.Entry {
	t.Helper()
	e, ok := r.Lookup(namespace, name)
	if !ok {
		t.Fatalf("no report entry for manager %s/%s; stderr:\n%s", namespace, name, r.Stderr)
	}
	return e
}

// Pair returns the report entry of rule namespace/name on namespace target.
func (r Result) Pair(t testing.TB, namespace, name, target string) report.Entry {
	t.Helper()
	for _, e := range r.Report.Entries {
		if e.Rule && e.Namespace == namespace && e.Name == name && e.Target == target {
			return e
		}
	}
	t.Fatalf("no report entry for rule %s/%s on namespace %s; stderr:\n%s", namespace, name, target, r.Stderr)
	return report.Entry{}
}

// Lookup returns the report entry of manager namespace/name, if the sweep
// listed it.
func (r Result) Lookup(namespace, name string) (report.Entry, bool) {
	for _, e := range r.Report.Entries {
		if e.Namespace == namespace && e.Name == name {
			return e, true
		}
	}
	return report.Entry{}, false
}

// Sweep runs `nsman sweep -o json` as nsman's ServiceAccount with args. A
// sweep that did not run (exit 2) has an empty Report.
func (e *Env) Sweep(t testing.TB, args ...string) Result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	all := append([]string{"sweep", "-o", "json", "--kubeconfig", e.Kubeconfig}, args...)
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--config-from") }) {
		// A test's dry run is its flags alone, whatever CronJob another
		// test installed (see nsman sweep --config-from).
		all = append(all, "--config-from=none")
	}
	code := cmd.Execute(t.Context(), all, &stdout, &stderr)
	res := Result{Code: code, Stdout: stdout.String(), Stderr: stderr.String()}
	if stdout.Len() == 0 && code == cmd.ExitUsage {
		return res // no report: the sweep did not run
	}
	if err := json.Unmarshal(stdout.Bytes(), &res.Report); err != nil {
		t.Fatalf("nsman %v: exit %d, report not JSON (%v):\n%s\nstderr:\n%s", all, code, err, stdout.String(), stderr.String())
	}
	return res
}

// Manager reads a NamespaceManager as admin.
func (e *Env) Manager(t testing.TB, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := e.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// Deactivated reports spec.deactivated of a manager.
func (e *Env) Deactivated(t testing.TB, namespace, name string) bool {
	t.Helper()
	v, _, _ := unstructured.NestedBool(e.Manager(t, namespace, name).Object, "spec", "deactivated")
	return v
}

// NamespaceGoneOrTerminating reports whether a namespace was deleted.
func (e *Env) NamespaceGoneOrTerminating(t testing.TB, name string) bool {
	t.Helper()
	ns, err := e.Cluster.Admin.CoreV1().Namespaces().Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return ns.DeletionTimestamp != nil
}

// Writes returns the mutating requests nsman's ServiceAccount made so far:
// not its reads, nor its access reviews, which are created but store
// nothing.
func (e *Env) Writes(t testing.TB) []cluster.Request {
	t.Helper()
	reqs, err := e.Cluster.AuditedRequests(t.Context(), e.User)
	if err != nil {
		t.Fatal(err)
	}
	var writes []cluster.Request
	for _, r := range reqs {
		switch {
		case r.Verb == "get", r.Verb == "list", r.Verb == "watch":
		case r.Verb == "create" && r.Resource == "selfsubjectaccessreviews":
		default:
			writes = append(writes, r)
		}
	}
	return writes
}

// Restore runs `nsman restore -n namespace` as nsman's ServiceAccount and
// returns its exit code.
func (e *Env) Restore(t testing.TB, namespace string) int {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cmd.Execute(t.Context(), []string{"restore", "-n", namespace, "--kubeconfig", e.Kubeconfig}, &stdout, &stderr)
	if code != 0 {
		t.Logf("nsman restore: %s%s", stdout.String(), stderr.String())
	}
	return code
}

// Prepared is a test package's shared control plane prepared for nsman
// once, at the first test that asks (Setup, with nsman's CRD), and the
// same Env for every later test.
type Prepared struct{ env *Env }

// Env is the package's Env, preparing c for nsman the first time.
func (p *Prepared) Env(t *testing.T, c *cluster.Cluster) *Env {
	t.Helper()
	if p.env != nil {
		return p.env
	}
	crd := CRD(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := Setup(ctx, c, crd)
	if err != nil {
		t.Fatalf("prepare control plane for nsman: %v", err)
	}
	p.env = e
	return e
}
