package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/explain"
	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
)

// widgetCRD is a namespaced custom resource whose finalizer no controller
// removes.
const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.explain.nsman.test}
spec:
  group: explain.nsman.test
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

var widgets = schema.GroupVersionResource{Group: "explain.nsman.test", Version: "v1", Resource: "widgets"}

// runExplain runs nsman explain -o json as admin.
func runExplain(t *testing.T, namespace string) (int, explain.Report, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cmd.Execute(t.Context(), []string{"explain", namespace, "-o", "json", "--kubeconfig", shared.Kubeconfig}, &stdout, &stderr)
	var r explain.Report
	if code == cmd.ExitOK {
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatalf("nsman explain %s: not JSON (%v):\n%s", namespace, err, stdout.String())
		}
	}
	return code, r, stderr.String()
}

// TestExplainStuckNamespaces deletes, on the full control plane (the
// namespace controller running), a namespace that holds a custom resource
// whose finalizer nobody removes, and one with a finalizer of its own;
// nsman explain names what holds each, and the command it prints for the
// custom resource, run as printed, lets the namespace go.
func TestExplainStuckNamespaces(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	e.Apply(t, []byte(widgetCRD))

	// A widget whose finalizer nobody removes.
	held := shared.Namespace(t)
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "explain.nsman.test/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "finalizers": []any{"explain.nsman.test/hold"}},
	}}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := e.Dynamic.Resource(widgets).Namespace(held).Create(ctx, w, metav1.CreateOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("create the widget: %v", err)
	}
	if code, r, _ := runExplain(t, held); code != cmd.ExitOK || r.Phase != "Active" || len(r.Unblock) != 0 {
		t.Errorf("an active namespace: exit %d, %+v; want it said to be Active, nothing to unblock", code, r)
	}
	if err := shared.Admin.CoreV1().Namespaces().Delete(ctx, held, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The namespace controller says why once it has deleted what it can.
	var r explain.Report
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, r, _ = runExplain(t, held)
		return slices.ContainsFunc(r.Conditions, func(c corev1.NamespaceCondition) bool {
			return c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue
		}), nil
	}); err != nil {
		t.Fatalf("no NamespaceFinalizersRemaining condition on %s: %+v", held, r)
	}
	if r.Phase != "Terminating" || !slices.ContainsFunc(r.Remaining, func(res explain.Resource) bool {
		return res.Resource == "widgets.explain.nsman.test" && res.Count == 1 && len(res.Finalized) == 1 &&
			res.Finalized[0].Name == "w1" && slices.Equal(res.Finalized[0].Finalizers, []string{"explain.nsman.test/hold"})
	}) {
		t.Fatalf("report %+v: want the widget w1 and its finalizer among what is left", r)
	}
	i := slices.IndexFunc(r.Unblock, func(s explain.Step) bool { return strings.Contains(s.Holds, "explain.nsman.test/hold") })
	if i < 0 || len(r.Unblock[i].Commands) == 0 || r.Unblock[i].Warning == "" || !strings.Contains(r.Unblock[i].Unblock, "its prefix names explain.nsman.test") {
		t.Fatalf("steps %+v: want one for the finalizer, naming its owner, with a command and a warning", r.Unblock)
	}
	// -o json: the cluster read, and the commands naming it.
	if want := (explain.Cluster{Kubeconfig: shared.Kubeconfig}); r.Cluster != want {
		t.Errorf("cluster %+v, want %+v: the --kubeconfig given", r.Cluster, want)
	}
	if !slices.ContainsFunc(r.Unblock[i].Commands, func(c string) bool {
		return strings.HasPrefix(c, "kubectl --kubeconfig "+shared.Kubeconfig+" -n ") && strings.Contains(c, " widgets.explain.nsman.test w1")
	}) {
		t.Fatalf("commands %q: want kubectl --kubeconfig %s patching widgets.explain.nsman.test w1", r.Unblock[i].Commands, shared.Kubeconfig)
	}
	// The commands as printed, pasted into a shell.
	pasteCommands(ctx, t, held)
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := shared.Admin.CoreV1().Namespaces().Get(ctx, held, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("namespace %s still there after the printed command", held)
	}
	if code, _, stderr := runExplain(t, held); code != cmd.ExitFailed || !strings.Contains(stderr, "namespace not found") {
		t.Errorf("a namespace that is gone: exit %d, %q; want %d, saying so", code, stderr, cmd.ExitFailed)
	}

	// A namespace with a finalizer of its own.
	own := shared.Namespace(t)
	ns, err := shared.Admin.CoreV1().Namespaces().Get(ctx, own, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, "explain.nsman.test/own")
	if _, err := shared.Admin.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := shared.Admin.CoreV1().Namespaces().Delete(ctx, own, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, r, _ = runExplain(t, own)
		return slices.Equal(r.Finalizers, []string{"explain.nsman.test/own"}), nil
	}); err != nil {
		t.Fatalf("report %+v: want the namespace's own finalizer alone left", r)
	}
	if i := slices.IndexFunc(r.Unblock, func(s explain.Step) bool {
		return strings.Contains(s.Holds, "the namespace's own finalizer explain.nsman.test/own") && len(s.Commands) == 1 && strings.Contains(s.Commands[0], "/api/v1/namespaces/"+own+"/finalize")
	}); i < 0 {
		t.Errorf("steps %+v: want the namespace's own finalizer, with the finalize command", r.Unblock)
	}
	// Let it go.
	ns, err = shared.Admin.CoreV1().Namespaces().Get(ctx, own, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Spec.Finalizers = nil
	if _, err := shared.Admin.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// pasteCommands runs nsman explain on namespace, as text, and runs every
// command it prints, each as a person would paste it into a shell: sh -c,
// with kubectl on the PATH, in a directory of its own, which must stay
// empty (no name ran a command). explain reads the test cluster through a
// kubeconfig whose current context is another cluster, with --context;
// kubectl's own $KUBECONFIG, when the commands run, is that other cluster
// alone: the commands reach the test cluster only by naming it as explain
// was told to. It returns the report as printed.
func pasteCommands(ctx context.Context, t *testing.T, namespace string) string {
	t.Helper()
	kubeconfig, contextName, elsewhere := twoClusters(t)
	var stdout, stderr bytes.Buffer
	if code := cmd.Execute(ctx, []string{"explain", namespace, "--kubeconfig", kubeconfig, "--context", contextName}, &stdout, &stderr); code != cmd.ExitOK {
		t.Fatalf("nsman explain %s: exit %d: %s", namespace, code, stderr.String())
	}
	var commands []string
	in := false
	for line := range strings.Lines(stdout.String()) {
		line = strings.TrimSuffix(line, "\n")
		before, after, found := strings.Cut(line, "a person could run (nsman does not):")
		switch {
		case found && strings.TrimSpace(before) == "":
			in = true
			if c := strings.TrimSpace(after); c != "" {
				commands = append(commands, c)
			}
		case in && strings.HasPrefix(line, "       "):
			commands = append(commands, strings.TrimSpace(line))
		default:
			in = false
		}
	}
	if len(commands) == 0 {
		t.Fatalf("nsman explain %s printed no command:\n%s", namespace, stdout.String())
	}
	dir := t.TempDir()
	env := append(os.Environ(), "PATH="+filepath.Dir(nsmantest.Kubectl(t))+":"+os.Getenv("PATH"), "KUBECONFIG="+elsewhere)
	for _, c := range commands {
		sh := exec.CommandContext(ctx, "sh", "-c", c)
		sh.Dir, sh.Env = dir, env
		if out, err := sh.CombinedOutput(); err != nil {
			t.Errorf("the printed command %q: %v\n%s", c, err, out)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("pasting the commands made %v: a name ran a command", entries)
	}
	return stdout.String()
}

// twoClusters writes two kubeconfigs: one of the test cluster, as the
// context it returns, and of a cluster that is not there, as the current
// context; and one of that other cluster alone.
func twoClusters(t *testing.T) (kubeconfig, contextName, elsewhere string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(shared.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	contextName = cfg.CurrentContext
	other := clientcmdapi.NewConfig()
	other.Clusters["elsewhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	other.AuthInfos["elsewhere"] = &clientcmdapi.AuthInfo{Token: "not-this-one"}
	other.Contexts["elsewhere"] = &clientcmdapi.Context{Cluster: "elsewhere", AuthInfo: "elsewhere"}
	other.CurrentContext = "elsewhere"
	elsewhere = filepath.Join(t.TempDir(), "elsewhere")
	if err := clientcmd.WriteToFile(*other, elsewhere); err != nil {
		t.Fatal(err)
	}
	for name, c := range other.Clusters {
		cfg.Clusters[name] = c
	}
	for name, a := range other.AuthInfos {
		cfg.AuthInfos[name] = a
	}
	for name, c := range other.Contexts {
		cfg.Contexts[name] = c
	}
	cfg.CurrentContext = "elsewhere"
	kubeconfig = filepath.Join(t.TempDir(), "two clusters's config")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, contextName, elsewhere
}

// TestExplainHostileNames deletes a namespace whose Roles (RBAC names may
// hold anything but / and %: shell syntax, a leading -, terminal escapes,
// newlines) all carry one finalizer nobody removes. nsman explain shows
// every name without a control character in its text, exactly in JSON,
// and the commands it prints, pasted into a shell, run no name and release
// every Role: the namespace goes.
func TestExplainHostileNames(t *testing.T) {
	setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	ns := shared.Namespace(t)
	names := []string{"r1", "r2", "r3", "$(touch${IFS}x)", "--as=nobody", "b';touch y;'", "c`touch z`", "e\x1b]0;title\x07\nfake line\u202e"}
	for _, name := range names {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"explain.nsman.test/hold"}}}
		if _, err := shared.Admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create Role %q: %v", name, err)
		}
	}
	if err := shared.Admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var r explain.Report
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, r, _ = runExplain(t, ns)
		return slices.ContainsFunc(r.Conditions, func(c corev1.NamespaceCondition) bool {
			return c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue
		}), nil
	}); err != nil {
		t.Fatalf("no NamespaceFinalizersRemaining condition on %s: %+v", ns, r)
	}
	var got []string
	for _, res := range r.Remaining {
		if res.Resource == "roles.rbac.authorization.k8s.io" {
			for _, o := range res.Finalized {
				got = append(got, o.Name)
			}
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(names))) {
		t.Fatalf("JSON names the Roles %q, want exactly %q", got, names)
	}
	text := pasteCommands(ctx, t, ns)
	for _, c := range text {
		if c != '\n' && (unicode.IsControl(c) || unicode.Is(unicode.Cf, c)) {
			t.Errorf("the text report holds %U:\n%s", c, text)
			break
		}
	}
	if !strings.Contains(text, `e\x1b]0;title\x07\x0afake line\u202e`) {
		t.Errorf("the text report does not show the escapes of the last Role's name:\n%s", text)
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := shared.Admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		roles, _ := shared.Admin.RbacV1().Roles(ns).List(ctx, metav1.ListOptions{})
		var left []string
		for _, role := range roles.Items {
			left = append(left, role.Name)
		}
		t.Fatalf("namespace %s still there after the printed commands; Roles left: %q", ns, left)
	}
}

// TestExplainUnavailableAPIService registers, on a full control plane of
// its own (it stalls every namespace deletion there), an APIService whose
// Service does not exist, lets a manager delete a namespace, and checks
// that nsman explain names the APIService, the group that cannot be
// discovered, and what would unblock them, and that a sweep past
// --stuck-after names the APIService too.
func TestExplainUnavailableAPIService(t *testing.T) {
	ctx, c := ownControlPlane(t, cluster.Options{Tier: cluster.FullTier})
	e, err := nsmantest.Setup(ctx, c, nsmantest.CRD(t))
	if err != nil {
		t.Fatal(err)
	}
	ns := c.Namespace(t)
	home := nsmantest.ServiceAccountNamespace
	deleter := managerObj(home, "deleter", ns, []any{ttlPolicy("delete at once", 0, deleteAction)}, targeting(ns))
	if _, err := e.Dynamic.Resource(nsmancluster.ManagerResource).Namespace(home).Create(ctx, deleter, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Apply(t, []byte(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.gone.nsman.test}
spec:
  group: gone.nsman.test
  version: v1
  service: {namespace: default, name: gone}
  groupPriorityMinimum: 1000
  versionPriority: 15
  insecureSkipTLSVerify: true
`))
	args := []string{"-l", caseLabel + "=" + ns, "--stuck-after", "1s"}
	wantState(t, e.Sweep(t, args...), home, "deleter", report.StateFired)
	var r explain.Report
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var stdout, stderr bytes.Buffer
		if code := cmd.Execute(ctx, []string{"explain", ns, "-o", "json", "--kubeconfig", c.Kubeconfig}, &stdout, &stderr); code != cmd.ExitOK {
			return false, nil
		}
		r = explain.Report{}
		_ = json.Unmarshal(stdout.Bytes(), &r)
		return len(r.UnavailableAPIServices) > 0 && slices.ContainsFunc(r.Conditions, func(c corev1.NamespaceCondition) bool {
			return c.Type == corev1.NamespaceDeletionDiscoveryFailure && c.Status == corev1.ConditionTrue
		}), nil
	}); err != nil {
		t.Fatalf("report %+v: want the unavailable APIService and the discovery failure", r)
	}
	if a := r.UnavailableAPIServices[0]; a.Name != "v1.gone.nsman.test" || a.Service != "default/gone" {
		t.Errorf("unavailable APIService %+v, want v1.gone.nsman.test behind default/gone", a)
	}
	if !slices.ContainsFunc(r.Unlisted, func(u explain.Unlisted) bool { return u.What == "API group gone.nsman.test/v1" }) {
		t.Errorf("not read %+v: want the group gone.nsman.test/v1", r.Unlisted)
	}
	if !slices.ContainsFunc(r.Unblock, func(s explain.Step) bool {
		return strings.Contains(s.Holds, "APIService v1.gone.nsman.test is unavailable") && slices.Equal(s.Commands, []string{"kubectl --kubeconfig " + c.Kubeconfig + " delete apiservice v1.gone.nsman.test"}) && strings.Contains(s.Holds, "no namespace of the cluster")
	}) {
		t.Errorf("steps %+v: want the APIService's, with its command", r.Unblock)
	}
	d := wantState(t, e.Sweep(t, args...), home, "deleter", report.StateTargetTerminating)
	if !hasReason(d.Stuck, report.StuckDiscoveryFailure, "APIService v1.gone.nsman.test (gone.nsman.test/v1) is unavailable") {
		t.Errorf("the deleter's entry %+v (stuck %+v): want the discovery failure, naming the APIService", d, d.Stuck)
	}
}
