package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/internal/duration"
	"github.com/nsman/nsman/test/cluster"
	"github.com/nsman/nsman/test/nsmantest"
	"github.com/nsman/nsman/webhook"
)

// The chart, relative to the repository, and the release name and namespace
// it is rendered with: those of deploy/base, so that the defaults render
// its objects.
const (
	chartDir       = "deploy/helm/nsman"
	chartRelease   = "nsman"
	chartNamespace = nsmantest.ServiceAccountNamespace
	chartImageRepo = "ghcr.io/nsman/nsman"
)

// helmBinary is the Helm that test/tools/build.sh built from the version
// test/tools/helm pins.
func helmBinary(t *testing.T) string {
	t.Helper()
	dir, err := cluster.ToolDir("helm", "helm.sh/helm/v4", "helm")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatal(cluster.MissingTool(bin))
	}
	return bin
}

// runHelm runs Helm with args and returns its stdout. Helm's own state
// (repositories, registry logins, caches) lives in a directory of t's, and
// KUBECONFIG names no file: only a --kubeconfig given reaches a cluster.
func runHelm(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, helmBinary(t), args...)
	cmd.Dir = nsmantest.RepoRoot()
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// helmTemplate renders the chart, CRD included, as release nsman in
// namespace-manager with the extra Helm flags given (-f, --set, ...).
func helmTemplate(t *testing.T, flags ...string) []*unstructured.Unstructured {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	args := append([]string{"template", chartRelease, chartDir, "--namespace", chartNamespace}, flags...)
	out, err := runHelm(ctx, t, args...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := nsmantest.Decode([]byte(out))
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	return objs
}

// chartFile reads a file of the chart.
func chartFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), chartDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// chartAppVersion is Chart.yaml's appVersion: the default image tag.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	var chart struct {
		APIVersion string `json:"apiVersion"`
		AppVersion string `json:"appVersion"`
	}
	if err := utilyaml.Unmarshal(chartFile(t, "Chart.yaml"), &chart); err != nil {
		t.Fatalf("Chart.yaml: %v", err)
	}
	if chart.APIVersion != "v2" || chart.AppVersion == "" {
		t.Fatalf("Chart.yaml: apiVersion %q, appVersion %q: want v2 and an appVersion", chart.APIVersion, chart.AppVersion)
	}
	return chart.AppVersion
}

// deployBase reads the objects of deploy/base as kustomize would build
// them: the files its kustomization lists, which may do nothing else.
func deployBase(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	dir := filepath.Join(nsmantest.RepoRoot(), "deploy", "base")
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := nsmantest.Decode(data)
	if err != nil || len(k) != 1 {
		t.Fatalf("deploy/base/kustomization.yaml: %v", err)
	}
	for key := range k[0].Object {
		if key != "apiVersion" && key != "kind" && key != "resources" {
			t.Fatalf("deploy/base/kustomization.yaml has %s: this test reads its resources as they are, and would miss what %s does", key, key)
		}
	}
	files, _, err := unstructured.NestedStringSlice(k[0].Object, "resources")
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		more, err := nsmantest.Decode(data)
		if err != nil {
			t.Fatalf("deploy/base/%s: %v", f, err)
		}
		objs = append(objs, more...)
	}
	return objs
}

// baseNamespace is the object of deploy/base that the chart does not
// render: Helm creates the release namespace (--create-namespace).
const baseNamespace = "Namespace /" + chartNamespace

// compareWithKustomize checks that the chart's objects are those of a
// kustomize build (deploy/base or an overlay) but the namespace, object by
// object, once the labels the chart adds are set aside: the image too is
// the same, the chart's appVersion.
func compareWithKustomize(t *testing.T, chart, kustomized []*unstructured.Unstructured) {
	t.Helper()
	want := slices.DeleteFunc(identities(kustomized), func(id string) bool { return id == baseNamespace })
	if got := identities(chart); !slices.Equal(got, want) {
		t.Fatalf("the chart renders\n  %q\nwant kustomize's but its Namespace\n  %q", got, want)
	}
	appVersion := chartAppVersion(t)
	for _, c := range chart {
		i := slices.IndexFunc(kustomized, func(k *unstructured.Unstructured) bool { return identity(k) == identity(c) })
		k, c := kustomized[i], c.DeepCopy()
		dropAddedLabels(c.Object, k.Object)
		if c.GetKind() == "CustomResourceDefinition" {
			// Kept on uninstall (crds.keep), and with it every manager.
			a := c.GetAnnotations()
			if a[keepPolicy] != "keep" {
				t.Errorf("%s: annotations %v, want %s: keep", identity(c), a, keepPolicy)
			}
			delete(a, keepPolicy)
			if len(a) == 0 {
				a = nil
			}
			c.SetAnnotations(a)
		}
		if c.GetKind() == "CronJob" {
			// One image reference: the chart's appVersion, which deploy/
			// names too (compared with the rest below).
			containers, _, _ := unstructured.NestedSlice(c.Object, "spec", "jobTemplate", "spec", "template", "spec", "containers")
			if len(containers) != 1 {
				t.Fatalf("%s: %d containers, want one", identity(c), len(containers))
			}
			if img := containers[0].(map[string]any)["image"]; img != chartImageRepo+":"+appVersion {
				t.Errorf("%s: image %v, want %s:%s, the chart's appVersion", identity(c), img, chartImageRepo, appVersion)
			}
		}
		if !reflect.DeepEqual(c.Object, k.Object) {
			got, _ := json.MarshalIndent(c.Object, "", "  ")
			want, _ := json.MarshalIndent(k.Object, "", "  ")
			t.Errorf("%s differs; the chart's, its own labels set aside:\n%s\nkustomize's:\n%s", identity(c), got, want)
		}
	}
}

// keepPolicy is the annotation that keeps an object on helm uninstall.
const keepPolicy = "helm.sh/resource-policy"

// chartLabel reports whether a label key is one of those the chart puts on
// everything: Kubernetes' recommended labels and Helm's chart label.
func chartLabel(key string) bool {
	return strings.HasPrefix(key, "app.kubernetes.io/") || strings.HasPrefix(key, "helm.sh/")
}

// dropAddedLabels deletes from every labels and matchLabels map of chart the
// chart's own labels that the same place in base lacks, and such maps
// left empty where base has none. A label base has too is kept, and so
// compared.
func dropAddedLabels(chart, base any) {
	switch c := chart.(type) {
	case map[string]any:
		b, _ := base.(map[string]any)
		for key, v := range c {
			labels, isMap := v.(map[string]any)
			if (key == "labels" || key == "matchLabels") && isMap {
				bl, inBase := b[key].(map[string]any)
				for l := range labels {
					if _, ok := bl[l]; !ok && chartLabel(l) {
						delete(labels, l)
					}
				}
				if len(labels) == 0 && !inBase {
					delete(c, key)
				}
				continue
			}
			dropAddedLabels(v, b[key])
		}
	case []any:
		b, _ := base.([]any)
		for i, v := range c {
			var bv any
			if i < len(b) {
				bv = b[i]
			}
			dropAddedLabels(v, bv)
		}
	}
}

// TestHelmChartCRDIsDeployBaseCRD: the chart's template renders
// deploy/base's CRD, kept byte for byte in files/, so that the two never
// drift (TestHelmChartDefaultsRenderDeployBase compares what it renders),
// and so are the alerting rules and the dashboard of deploy/monitoring;
// there is no crds/, which Helm would install once and never upgrade.
func TestHelmChartCRDIsDeployBaseCRD(t *testing.T) {
	got := chartFile(t, "files/namespacemanagers.k8s.consol.de.yaml")
	if want := nsmantest.CRD(t); !bytes.Equal(got, want) {
		t.Fatalf("%s/files/namespacemanagers.k8s.consol.de.yaml differs from deploy/base/crd.yaml: copy it again", chartDir)
	}
	entries, err := os.ReadDir(filepath.Join(nsmantest.RepoRoot(), chartDir, "files"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"namespacemanagers.k8s.consol.de.yaml", "nsman-alerts.yaml", "nsman-dashboard.json"}; !slices.Equal(names, want) {
		t.Errorf("%s/files holds %q, want %q: the CRD and the monitoring files alone", chartDir, names, want)
	}
	for _, name := range []string{alertsFile, dashboardFile} {
		if !bytes.Equal(chartFile(t, "files/"+filepath.Base(name)), repoFile(t, name)) {
			t.Errorf("%s/files/%s differs from %s: copy it again", chartDir, filepath.Base(name), name)
		}
	}
	if _, err := os.Stat(filepath.Join(nsmantest.RepoRoot(), chartDir, "crds")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s/crds: %v, want none: Helm never upgrades what it holds", chartDir, err)
	}
}

// TestHelmChartDefaultsRenderDeployBase: with its default values the chart
// renders the objects of deploy/base, but the Namespace, with the same
// content: the ClusterRole's rules, the CronJob's schedule, limits,
// arguments, security context and image. Only the chart's own labels
// differ.
func TestHelmChartDefaultsRenderDeployBase(t *testing.T) {
	compareWithKustomize(t, helmTemplate(t), deployBase(t))
}

// TestHelmChartValuesReproduceOverlays: for each overlay of deploy/, a
// values file of the chart's ci/ renders what the overlay does.
func TestHelmChartValuesReproduceOverlays(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	overlays, err := os.ReadDir(filepath.Join(nsmantest.RepoRoot(), "deploy", "overlays"))
	if err != nil {
		t.Fatal(err)
	}
	if len(overlays) == 0 {
		t.Fatal("no overlays in deploy/overlays")
	}
	for _, o := range overlays {
		t.Run(o.Name(), func(t *testing.T) {
			values := filepath.Join(chartDir, "ci", o.Name()+"-values.yaml")
			if _, err := os.Stat(filepath.Join(nsmantest.RepoRoot(), values)); err != nil {
				t.Fatalf("no values file for overlay %s: want %s", o.Name(), values)
			}
			compareWithKustomize(t, helmTemplate(t, "-f", values), kustomize(ctx, t, filepath.Join("deploy", "overlays", o.Name())))
		})
	}
}

// rendered is the chart rendered with some values.
type rendered struct {
	objs []*unstructured.Unstructured
	cj   *batchv1.CronJob
}

func render(t *testing.T, flags ...string) rendered {
	t.Helper()
	objs := helmTemplate(t, flags...)
	return rendered{objs: objs, cj: typedCronJob(t, cronJobObject(t, objs))}
}

// container is the CronJob's nsman container.
func (r rendered) container(t *testing.T) corev1.Container {
	t.Helper()
	return nsmanContainer(t, r.cj)
}

// pod is the spec of the pods of the CronJob's Jobs.
func (r rendered) pod() corev1.PodSpec {
	return r.cj.Spec.JobTemplate.Spec.Template.Spec
}

// args are the nsman container's arguments.
func (r rendered) args(t *testing.T) []string {
	t.Helper()
	return r.container(t).Args
}

// find returns the rendered object of kind, or nil.
func (r rendered) find(kind string) *unstructured.Unstructured {
	for _, o := range r.objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

// defaultArgs are the arguments the defaults render, as deploy/base has them.
var defaultArgs = []string{"sweep", "--log-format=json"}

// wantArgs checks the CronJob's arguments: the defaults', then more.
func wantArgs(t *testing.T, r rendered, more ...string) {
	t.Helper()
	if got, want := r.args(t), append(slices.Clone(defaultArgs), more...); !slices.Equal(got, want) {
		t.Errorf("args %q, want %q", got, want)
	}
}

// wantSigningKey checks that the key of Secret secret, at item key, is
// mounted where --webhook-signing-key-file reads it, as the
// webhook-signing overlay mounts it.
func wantSigningKey(t *testing.T, r rendered, secret, key string) {
	t.Helper()
	if !slices.Contains(r.args(t), signingKeyFlag) {
		t.Errorf("args %q lack %s", r.args(t), signingKeyFlag)
	}
	vols := r.pod().Volumes
	if len(vols) != 1 || vols[0].Secret == nil {
		t.Fatalf("volumes %+v, want the signing key's Secret alone", vols)
	}
	s := vols[0].Secret
	if s.SecretName != secret || !slices.Equal(s.Items, []corev1.KeyToPath{{Key: key, Path: "key"}}) {
		t.Errorf("Secret volume %s items %+v, want %s with %s at key", s.SecretName, s.Items, secret, key)
	}
	if ptr.Deref(s.Optional, false) {
		t.Error("Secret volume optional: a missing key would send unsigned webhooks")
	}
	if m := ptr.Deref(s.DefaultMode, 0o644); m != 0o440 {
		t.Errorf("key file mode %o, want 440", m)
	}
	if mounts := r.container(t).VolumeMounts; !slices.Equal(mounts, []corev1.VolumeMount{{Name: vols[0].Name, MountPath: signingKeyDir, ReadOnly: true}}) {
		t.Errorf("mounts %+v, want %s read-only at %s", mounts, vols[0].Name, signingKeyDir)
	}
}

// wantNoSigningKey checks that nothing of a signing key is rendered.
func wantNoSigningKey(t *testing.T, r rendered) {
	t.Helper()
	if slices.ContainsFunc(r.args(t), func(a string) bool { return strings.HasPrefix(a, "--webhook-signing-key-file") }) {
		t.Errorf("args %q: a signing key without one set", r.args(t))
	}
	if len(r.pod().Volumes) > 0 || len(r.container(t).VolumeMounts) > 0 {
		t.Errorf("volumes %+v, mounts %+v: want none", r.pod().Volumes, r.container(t).VolumeMounts)
	}
	if s := r.find("Secret"); s != nil {
		t.Errorf("Secret %s rendered without a key value", s.GetName())
	}
}

// The notification URL and the key that signs notifications, as the
// chart and the notify overlay mount them.
const (
	notifyURLSecret = "nsman-notify-url"
	notifyURLDir    = "/etc/nsman/notify"
	notifyURLFlag   = "--notify-url-file=" + notifyURLDir + "/url"
	notifyKeySecret = "nsman-notify-signing-key"
	notifyKeyDir    = "/etc/nsman/notify-signing-key"
	notifyKeyFlag   = "--notify-signing-key-file=" + notifyKeyDir + "/key"
)

// wantSecretFile checks that item key of Secret secret is mounted at
// dir/path, read-only, readable by the owner and fsGroup alone, by a volume
// that is not optional.
func wantSecretFile(t *testing.T, r rendered, secret, key, dir, path string) {
	t.Helper()
	vols := r.pod().Volumes
	i := slices.IndexFunc(vols, func(v corev1.Volume) bool {
		return v.Secret != nil && v.Secret.SecretName == secret && slices.Equal(v.Secret.Items, []corev1.KeyToPath{{Key: key, Path: path}})
	})
	if i < 0 {
		t.Fatalf("volumes %+v: none of Secret %s with %s at %s", vols, secret, key, path)
	}
	if ptr.Deref(vols[i].Secret.Optional, false) {
		t.Errorf("Secret %s's volume optional: nsman would start without it", secret)
	}
	if m := ptr.Deref(vols[i].Secret.DefaultMode, 0o644); m != 0o440 {
		t.Errorf("Secret %s's files mode %o, want 440", secret, m)
	}
	if mounts := r.container(t).VolumeMounts; !slices.Contains(mounts, corev1.VolumeMount{Name: vols[i].Name, MountPath: dir, ReadOnly: true}) {
		t.Errorf("mounts %+v: want %s read-only at %s", mounts, vols[i].Name, dir)
	}
}

// wantFreezeCalendar checks that item key of ConfigMap configMap is
// mounted read-only at /etc/nsman/freeze/calendar, where --freeze-file
// reads it, by a volume that is not optional, and that the flag is passed.
func wantFreezeCalendar(t *testing.T, r rendered, configMap, key string) {
	t.Helper()
	if !slices.Contains(r.args(t), freezeFileFlag) {
		t.Errorf("args %q lack %s", r.args(t), freezeFileFlag)
	}
	vols := r.pod().Volumes
	i := slices.IndexFunc(vols, func(v corev1.Volume) bool {
		return v.ConfigMap != nil && v.ConfigMap.Name == configMap && slices.Equal(v.ConfigMap.Items, []corev1.KeyToPath{{Key: key, Path: "calendar"}})
	})
	if i < 0 {
		t.Fatalf("volumes %+v: none of ConfigMap %s with %s at calendar", vols, configMap, key)
	}
	if ptr.Deref(vols[i].ConfigMap.Optional, false) {
		t.Errorf("ConfigMap %s's volume optional: nsman would sweep without its calendar", configMap)
	}
	if mounts := r.container(t).VolumeMounts; !slices.Contains(mounts, corev1.VolumeMount{Name: vols[i].Name, MountPath: freezeDir, ReadOnly: true}) {
		t.Errorf("mounts %+v: want %s read-only at %s", mounts, vols[i].Name, freezeDir)
	}
}

// wantCreatedFreezeCalendar checks the ConfigMap the chart creates from
// freeze.calendar, and that it is the one mounted.
func wantCreatedFreezeCalendar(t *testing.T, r rendered, name, calendar string) {
	t.Helper()
	obj := r.find("ConfigMap")
	if obj == nil {
		t.Fatal("no ConfigMap rendered for freeze.calendar")
	}
	cm := &corev1.ConfigMap{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, cm, true); err != nil {
		t.Fatal(err)
	}
	if cm.Name != name || cm.Namespace != chartNamespace {
		t.Errorf("ConfigMap %s/%s, want %s/%s", cm.Namespace, cm.Name, chartNamespace, name)
	}
	if len(cm.Data) != 1 || cm.Data["calendar"] != calendar || len(cm.BinaryData) > 0 {
		t.Errorf("ConfigMap data %q, want calendar %q alone", cm.Data, calendar)
	}
	wantFreezeCalendar(t, r, name, "calendar")
}

// wantNoFreezeCalendar checks that nothing of a freeze calendar is
// rendered.
func wantNoFreezeCalendar(t *testing.T, r rendered) {
	t.Helper()
	if slices.ContainsFunc(r.args(t), func(a string) bool { return strings.HasPrefix(a, "--freeze-file") }) {
		t.Errorf("args %q: a calendar without one set", r.args(t))
	}
	if slices.ContainsFunc(r.pod().Volumes, func(v corev1.Volume) bool { return v.ConfigMap != nil }) {
		t.Errorf("volumes %+v: a ConfigMap's without a calendar set", r.pod().Volumes)
	}
	if cm := r.find("ConfigMap"); cm != nil {
		t.Errorf("ConfigMap %s rendered without a calendar", cm.GetName())
	}
}

// freezeCalendar is a calendar set as freeze.calendar.
const freezeCalendar = "# holidays\n2026-12-24/2026-12-26\n\n2026-12-31T18:00:00+01:00/2027-01-01T12:00:00+01:00  # New Year\n"

// wantNotifyURLHidden checks that the CronJob holds nothing of the
// notification URL secret (a part of it): no argument, no environment
// variable, no annotation; and no --notify-url.
func wantNotifyURLHidden(t *testing.T, r rendered, secret string) {
	t.Helper()
	if slices.ContainsFunc(r.args(t), func(a string) bool { return strings.HasPrefix(a, "--notify-url=") }) {
		t.Errorf("args %q: the notification URL as an argument", r.args(t))
	}
	data, err := json.Marshal(r.cj)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), secret) {
		t.Errorf("the CronJob holds the notification URL's %s:\n%s", secret, data)
	}
}

// signingKeyValue is the key ci/signing-key-value-values.yaml sets.
const signingKeyValue = "8d6f0c1e5b7a4f3e9d2c1b0a8f7e6d5c4b3a29180f1e2d3c4b5a69788f9e0d1c"

// wantCreatedSigningKey checks the Secret the chart creates from
// webhook.signingKey.value, and that it is the one mounted.
func wantCreatedSigningKey(t *testing.T, r rendered, name, value string) {
	t.Helper()
	obj := r.find("Secret")
	if obj == nil {
		t.Fatal("no Secret rendered for webhook.signingKey.value")
	}
	s := &corev1.Secret{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, s, true); err != nil {
		t.Fatal(err)
	}
	if s.Name != name || s.Namespace != chartNamespace {
		t.Errorf("Secret %s/%s, want %s/%s", s.Namespace, s.Name, chartNamespace, name)
	}
	if len(s.Data) != 1 || string(s.Data["key"]) != value {
		t.Errorf("Secret data %q, want key %q alone", s.Data, value)
	}
	wantSigningKey(t, r, name, "key")
}

// wantShards checks the Job of each sweep: Indexed with n pods at once and
// --shard-count=n when n is above 1, else a Job of one pod.
func wantShards(t *testing.T, r rendered, n int32) {
	t.Helper()
	job := r.cj.Spec.JobTemplate.Spec
	if n == 1 {
		if job.CompletionMode != nil || job.Completions != nil || job.Parallelism != nil {
			t.Errorf("completionMode %v, completions %v, parallelism %v: want unset for one shard", ptrString(job.CompletionMode), ptrString(job.Completions), ptrString(job.Parallelism))
		}
		if slices.ContainsFunc(r.args(t), func(a string) bool { return strings.HasPrefix(a, "--shard-count") }) {
			t.Errorf("args %q: --shard-count for one shard", r.args(t))
		}
		return
	}
	if ptr.Deref(job.CompletionMode, "") != batchv1.IndexedCompletion || ptr.Deref(job.Completions, 0) != n || ptr.Deref(job.Parallelism, 0) != n {
		t.Errorf("completionMode %v, completions %v, parallelism %v: want Indexed, %d, %d", ptrString(job.CompletionMode), ptrString(job.Completions), ptrString(job.Parallelism), n, n)
	}
	if flag := fmt.Sprintf("--shard-count=%d", n); !slices.Contains(r.args(t), flag) {
		t.Errorf("args %q lack %s", r.args(t), flag)
	}
}

// TestHelmChartValues renders the chart with values set on the command
// line and checks what each changes.
// The chart states the Kubernetes it needs: helm refuses a cluster older
// than 1.30, saying so, rather than failing on the admission policy's API.
func TestHelmChartNeedsKubernetes130(t *testing.T) {
	ctx := t.Context()
	if out, err := runHelm(ctx, t, "template", chartRelease, chartDir, "--kube-version", "1.29.9"); err == nil || !strings.Contains(out+err.Error(), "requires kubeVersion: >=1.30.0-0") {
		t.Errorf("helm template for Kubernetes 1.29: %v\n%s; want it refused, naming 1.30", err, out)
	}
	if out, err := runHelm(ctx, t, "template", chartRelease, chartDir, "--kube-version", "1.30.0"); err != nil {
		t.Errorf("helm template for Kubernetes 1.30: %v\n%s", err, out)
	}
}

func TestHelmChartValues(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		check func(t *testing.T, r rendered)
	}{
		{"defaults", nil, func(t *testing.T, r rendered) {
			wantArgs(t, r)
			wantShards(t, r, 1)
			wantNoSigningKey(t, r)
			wantNoFreezeCalendar(t, r)
			wantNoMonitoring(t, r)
			if r.cj.Spec.Suspend != nil {
				t.Errorf("suspend %v, want unset", *r.cj.Spec.Suspend)
			}
			if p := r.container(t).ImagePullPolicy; p != "" {
				t.Errorf("imagePullPolicy %q, want Kubernetes' default", p)
			}
		}},
		{"crds.enabled=false", []string{"--set", "crds.enabled=false"}, func(t *testing.T, r rendered) {
			if crd := r.find("CustomResourceDefinition"); crd != nil {
				t.Errorf("CRD %s rendered: crds.enabled=false leaves it alone", crd.GetName())
			}
		}},
		{"crds unset, as a release of a chart before them keeps its values (--reuse-values)", []string{"--set", "crds=null"}, func(t *testing.T, r rendered) {
			if crd := r.find("CustomResourceDefinition"); crd == nil || crd.GetAnnotations()[keepPolicy] != "keep" {
				t.Errorf("CRD %v: want it rendered and kept, the defaults", crd)
			}
		}},
		{"freeze unset, as a release of a chart before it keeps its values (--reuse-values)", []string{"--set", "freeze=null"}, func(t *testing.T, r rendered) {
			wantArgs(t, r)
			wantNoSigningKey(t, r)
			wantNoFreezeCalendar(t, r)
		}},
		{"freeze ranges and time zone", []string{"--set-json", `freeze.ranges=["2026-12-24/2026-12-26","2026-12-31T18:00:00+01:00/2027-01-01T12:00:00+01:00"]`, "--set", "freeze.timeZone=Europe/Berlin"}, func(t *testing.T, r rendered) {
			wantArgs(t, r, "--freeze=2026-12-24/2026-12-26", "--freeze=2026-12-31T18:00:00+01:00/2027-01-01T12:00:00+01:00", "--freeze-time-zone=Europe/Berlin")
			wantNoFreezeCalendar(t, r)
		}},
		// Durations as the flags take them, weeks and days first.
		{"durations in weeks and days", []string{"--set", "claimTTL=90s,maxHold=1w2d,stuckAfter=2d,webhook.timeout=1m30s"}, func(t *testing.T, r rendered) {
			wantArgs(t, r, "--claim-ttl=90s", "--max-hold=1w2d", "--stuck-after=2d", "--webhook-timeout=1m30s")
		}},
		{"freeze calendar from a value", []string{"--set-json", "freeze.calendar=" + jsonString(t, freezeCalendar), "--set", "freeze.existingConfigMapKey=unused"}, func(t *testing.T, r rendered) {
			wantCreatedFreezeCalendar(t, r, "nsman-freeze", freezeCalendar)
			wantArgs(t, r, freezeFileFlag)
		}},
		{"freeze calendar ConfigMap named after the release", []string{"--set-json", "freeze.calendar=" + jsonString(t, freezeCalendar), "--set", "fullnameOverride=sweeper"}, func(t *testing.T, r rendered) {
			wantCreatedFreezeCalendar(t, r, "sweeper-freeze", freezeCalendar)
		}},
		{"freeze calendar from an existing ConfigMap, with ranges, beside Secrets", []string{"--set", "freeze.existingConfigMap=holidays,freeze.existingConfigMapKey=de.txt,notify.existingSecret=chat,webhook.signingKey.existingSecret=hmac", "--set-json", `freeze.ranges=["2026-12-24/2026-12-26"]`}, func(t *testing.T, r rendered) {
			wantFreezeCalendar(t, r, "holidays", "de.txt")
			wantSecretFile(t, r, "chat", "url", notifyURLDir, "url")
			wantSecretFile(t, r, "hmac", "key", signingKeyDir, "key")
			if cm := r.find("ConfigMap"); cm != nil {
				t.Errorf("ConfigMap %s rendered: the existing one is the user's", cm.GetName())
			}
			wantArgs(t, r, "--freeze=2026-12-24/2026-12-26", freezeFileFlag, signingKeyFlag, notifyURLFlag, "--notify-format=json")
		}},
		{"clusterName, as a fleet's ApplicationSet sets it", []string{"--set", "pushgateway.url=http://pushgateway.monitoring:9091,clusterName=prod eu/1"}, func(t *testing.T, r rendered) {
			wantArgs(t, r, "--pushgateway-url=http://pushgateway.monitoring:9091", "--cluster-name=prod eu/1")
		}},
		{"rbac.aggregateClusterRoles=false", []string{"--set", "rbac.aggregateClusterRoles=false"}, func(t *testing.T, r rendered) {
			wantClusterRoles(t, r, "nsman")
		}},
		{"rbac unset, as a release of a chart before it keeps its values (--reuse-values)", []string{"--set", "rbac=null"}, func(t *testing.T, r rendered) {
			wantClusterRoles(t, r, "nsman", "nsman-edit", "nsman-view")
		}},
		{"crds.keep=false", []string{"--set", "crds.keep=false"}, func(t *testing.T, r rendered) {
			crd := r.find("CustomResourceDefinition")
			if crd == nil {
				t.Fatal("no CRD rendered")
			}
			if a, ok := crd.GetAnnotations()[keepPolicy]; ok {
				t.Errorf("CRD annotated %s: %s: crds.keep=false lets helm uninstall delete it", keepPolicy, a)
			}
		}},
		{"shards=3", []string{"--set", "shards=3"}, func(t *testing.T, r rendered) {
			wantShards(t, r, 3)
			wantArgs(t, r, "--shard-count=3")
		}},
		{"shards=1", []string{"--set", "shards=1"}, func(t *testing.T, r rendered) { wantShards(t, r, 1); wantArgs(t, r) }},
		{"signing key from an existing Secret", []string{"--set", "webhook.signingKey.existingSecret=hmac,webhook.signingKey.existingSecretKey=sha256-key"}, func(t *testing.T, r rendered) {
			wantSigningKey(t, r, "hmac", "sha256-key")
			if s := r.find("Secret"); s != nil {
				t.Errorf("Secret %s rendered: the existing one is the user's", s.GetName())
			}
			wantArgs(t, r, signingKeyFlag)
		}},
		{"signing key from a value", []string{"--set", "webhook.signingKey.value=s3cret,webhook.signingKey.existingSecretKey=unused"}, func(t *testing.T, r rendered) {
			wantCreatedSigningKey(t, r, "nsman-webhook-signing-key", "s3cret")
		}},
		{"signing key Secret named after the release", []string{"--set", "webhook.signingKey.value=s3cret,fullnameOverride=sweeper"}, func(t *testing.T, r rendered) {
			wantCreatedSigningKey(t, r, "sweeper-webhook-signing-key", "s3cret")
		}},
		{"image tag", []string{"--set", "image.tag=v9.9.9"}, func(t *testing.T, r rendered) {
			if img := r.container(t).Image; img != chartImageRepo+":v9.9.9" {
				t.Errorf("image %s, want the tag set", img)
			}
		}},
		{"image digest over tag", []string{"--set", "image.tag=v9.9.9,image.digest=sha256:" + strings.Repeat("ab", 32)}, func(t *testing.T, r rendered) {
			if img := r.container(t).Image; img != chartImageRepo+"@sha256:"+strings.Repeat("ab", 32) {
				t.Errorf("image %s, want it by digest", img)
			}
		}},
		{"no namespace trusted", []string{"--set-json", "trustedNamespaces=[]"}, func(t *testing.T, r rendered) {
			wantArgs(t, r, "--trusted-namespaces=")
		}},
		{"protected namespaces", []string{"--set-json", `protectedNamespaces=["default","prod"]`}, func(t *testing.T, r rendered) {
			wantArgs(t, r, "--protected-namespaces=default,prod")
		}},
		{"dry run, limits, level", []string{"--set", "dryRun=true,maxActions=5,concurrency=2,log.level=warn"}, func(t *testing.T, r rendered) {
			wantArgs(t, r, "--log-level=warn", "--dry-run", "--max-actions=5", "--concurrency=2")
		}},
		{"suspend", []string{"--set", "suspend=true"}, func(t *testing.T, r rendered) {
			if !ptr.Deref(r.cj.Spec.Suspend, false) {
				t.Error("suspend not true")
			}
		}},
		{"extra args last", []string{"--set", "dryRun=true", "--set-json", `extraArgs=["--qps=50","--burst=100"]`}, func(t *testing.T, r rendered) {
			wantArgs(t, r, "--dry-run", "--qps=50", "--burst=100")
		}},
		{"notification URL from an existing Secret", []string{"--set", "notify.existingSecret=chat,notify.existingSecretKey=slack-url,notify.format=slack"}, func(t *testing.T, r rendered) {
			wantSecretFile(t, r, "chat", "slack-url", notifyURLDir, "url")
			wantArgs(t, r, notifyURLFlag, "--notify-format=slack")
			if s := r.find("Secret"); s != nil {
				t.Errorf("Secret %s rendered: the existing one is the user's", s.GetName())
			}
		}},
		{"notifications to Teams", []string{"--set", "notify.existingSecret=chat,notify.format=teams"}, func(t *testing.T, r rendered) {
			wantArgs(t, r, notifyURLFlag, "--notify-format=teams")
		}},
		{"notifications to Google Chat", []string{"--set", "notify.existingSecret=chat,notify.format=googlechat"}, func(t *testing.T, r rendered) {
			wantArgs(t, r, notifyURLFlag, "--notify-format=googlechat")
		}},
		{"notification URL from a value", []string{"--set", "notify.url=https://hooks.slack.com/services/T0SECRET/B0SECRET/XXSECRET"}, func(t *testing.T, r rendered) {
			wantSecretFile(t, r, notifyURLSecret, "url", notifyURLDir, "url")
			wantArgs(t, r, notifyURLFlag, "--notify-format=json")
			wantNotifyURLHidden(t, r, "SECRET")
			obj := r.find("Secret")
			if obj == nil {
				t.Fatal("no Secret rendered for notify.url")
			}
			s := &corev1.Secret{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, s, true); err != nil {
				t.Fatal(err)
			}
			if s.Name != notifyURLSecret || len(s.Data) != 1 || string(s.Data["url"]) != "https://hooks.slack.com/services/T0SECRET/B0SECRET/XXSECRET" {
				t.Errorf("Secret %s data %q, want %s with the URL at url", s.Name, s.Data, notifyURLSecret)
			}
		}},
		{"notification signing key, extra args last", []string{"--set", "notify.existingSecret=chat,notify.signingKey.existingSecret=chat-key,webhook.signingKey.existingSecret=hmac", "--set-json", `extraArgs=["--qps=50"]`}, func(t *testing.T, r rendered) {
			wantSecretFile(t, r, "chat", "url", notifyURLDir, "url")
			wantSecretFile(t, r, "chat-key", "key", notifyKeyDir, "key")
			wantSecretFile(t, r, "hmac", "key", signingKeyDir, "key")
			wantArgs(t, r, signingKeyFlag, notifyURLFlag, "--notify-format=json", notifyKeyFlag, "--qps=50")
		}},
		{"notification channels from Secrets", []string{"--set", "notify.existingSecret=chat", "--set-json", `notify.channels=[{"name":"team-a","existingSecret":"a-slack"},{"name":"team-b","existingSecret":"b","key":"hook","format":"teams"}]`}, func(t *testing.T, r rendered) {
			wantSecretFile(t, r, "chat", "url", notifyURLDir, "url")
			wantSecretFile(t, r, "a-slack", "url", "/etc/nsman/notify-channels/team-a", "url")
			wantSecretFile(t, r, "b", "hook", "/etc/nsman/notify-channels/team-b", "url")
			wantArgs(t, r, notifyURLFlag, "--notify-format=json", "--notify-channel=team-a=/etc/nsman/notify-channels/team-a/url",
				"--notify-channel=team-b=/etc/nsman/notify-channels/team-b/url", "--notify-channel-format=team-b=teams")
		}},
		{"notification channels alone, signed", []string{"--set", "notify.format=slack,notify.channels[0].name=team-a,notify.channels[0].existingSecret=a,notify.signingKey.existingSecret=chat-key"}, func(t *testing.T, r rendered) {
			wantSecretFile(t, r, "a", "url", "/etc/nsman/notify-channels/team-a", "url")
			wantSecretFile(t, r, "chat-key", "key", notifyKeyDir, "key")
			wantArgs(t, r, "--notify-format=slack", "--notify-channel=team-a=/etc/nsman/notify-channels/team-a/url", notifyKeyFlag)
		}},
		{"notification signing key from a value", []string{"--set", "notify.existingSecret=chat,notify.signingKey.value=s3cret"}, func(t *testing.T, r rendered) {
			wantSecretFile(t, r, notifyKeySecret, "key", notifyKeyDir, "key")
			obj := r.find("Secret")
			if obj == nil || obj.GetName() != notifyKeySecret {
				t.Fatalf("Secret %v rendered, want %s", obj, notifyKeySecret)
			}
			if data, _, _ := unstructured.NestedStringMap(obj.Object, "data"); len(data) != 1 || data["key"] != "czNjcmV0" {
				t.Errorf("Secret %s data %v, want the key at key", notifyKeySecret, data)
			}
		}},
		{"alerts, in the release namespace", []string{"--set", "monitoring.prometheusRule.enabled=true"}, func(t *testing.T, r rendered) {
			wantPrometheusRule(t, r, chartNamespace, nil, nil)
			if obj := dashboardConfigMap(r); obj != nil {
				t.Errorf("ConfigMap %s rendered, want no dashboard", obj.GetName())
			}
		}},
		{"the dashboard, labelled for Grafana's sidecar", []string{"--set", "monitoring.dashboard.enabled=true,commonAnnotations.team=platform"}, func(t *testing.T, r rendered) {
			wantDashboard(t, r, chartNamespace, map[string]string{grafanaLabel: "1"}, map[string]string{"team": "platform"})
			if obj := r.find(prometheusRule); obj != nil {
				t.Errorf("PrometheusRule %s rendered, want none", obj.GetName())
			}
		}},
		{"the dashboard, labelled otherwise (the default label null), elsewhere", []string{"--set", "monitoring.dashboard.enabled=true,monitoring.dashboard.namespace=grafana", "--set-json", `monitoring.dashboard.labels={"grafana_dashboard":null,"dashboards":"nsman"}`}, func(t *testing.T, r rendered) {
			wantDashboard(t, r, "grafana", map[string]string{"dashboards": "nsman"}, nil)
			if v, ok := dashboardConfigMap(r).GetLabels()[grafanaLabel]; ok {
				t.Errorf("label %s=%q kept, want the labels given in its place", grafanaLabel, v)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, render(t, tc.flags...)) })
	}
}

// wantClusterRoles checks that the chart renders the ClusterRoles named,
// and no other.
func wantClusterRoles(t *testing.T, r rendered, names ...string) {
	t.Helper()
	var got []string
	for _, o := range r.objs {
		if o.GetKind() == "ClusterRole" {
			got = append(got, o.GetName())
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, names) {
		t.Errorf("ClusterRoles %q rendered, want %q", got, names)
	}
}

// TestHelmChartSchemaRefusesWrongValues: values.schema.json makes a typo
// or a value of the wrong kind fail before anything renders, and the
// templates refuse a signing key given twice.
func TestHelmChartSchemaRefusesWrongValues(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		set  string
		want string
	}{
		{"imag.tag=x", "additional properties 'imag' not allowed"},
		{"image.tga=x", "additional properties 'tga' not allowed"},
		{"dryrun=true", "additional properties 'dryrun' not allowed"},
		{"webhook.signingkey.value=x", "additional properties 'signingkey' not allowed"},
		{"podSecurityContext.runAsUsr=1000", "additional properties 'runAsUsr' not allowed"},
		{"networkPolicy.enable=true", "additional properties 'enable' not allowed"},
		{"rbac.aggregateClusterRole=false", "additional properties 'aggregateClusterRole' not allowed"},
		{"rbac.aggregateClusterRoles=no", "/rbac/aggregateClusterRoles"},
		{"dryRun=yes", "/dryRun"},
		{"shards=0", "/shards"},
		{"maxActions=-1", "/maxActions"},
		{"chunkSize=-1", "/chunkSize"},
		{"claimTTL=2 minutes", "/claimTTL"},
		{"claimTTL=1.5d", "/claimTTL"},
		{"maxHold=2x", "/maxHold"},
		{"maxHold=2d1w", "/maxHold"},
		{"stuckAfter=-10m", "/stuckAfter"},
		{"stuckAfter=d", "/stuckAfter"},
		{"argocdNamespace=Argo_CD", "/argocdNamespace"},
		{"reclaim=no", "/reclaim"},
		{"webhook.timeout=10", "/webhook/timeout"},
		{"log.format=xml", "/log/format"},
		{"log.level=verbose", "/log/level"},
		{"image.digest=latest", "/image/digest"},
		{"image.pullPolicy=Sometimes", "/image/pullPolicy"},
		{"trustedNamespaces={Team_A}", "/trustedNamespaces/0"},
		{"extraArgs={sweep}", "/extraArgs/0"},
		{"pushgateway.url=pushgateway:9091", "/pushgateway/url"},
		{"clusterName=1", "/clusterName"},
		{"webhook.signingKey.existingSecret=a,webhook.signingKey.value=b", "set existingSecret or value, not both"},
		{"notify.url=hooks.slack.com/services/x", "/notify/url"},
		{"notify.existingSecretKey=", "/notify/existingSecretKey"},
		{"notify.urlFile=x", "additional properties 'urlFile' not allowed"},
		{"notify.format=discord", "/notify/format"},
		{"notify.format=Teams", "/notify/format"},
		{"notify.existingSecret=a,notify.url=https://hooks.slack.com/services/x", "notify: set existingSecret or url, not both"},
		{"notify.existingSecret=a,notify.signingKey.existingSecret=b,notify.signingKey.value=c", "notify.signingKey: set existingSecret or value, not both"},
		{"notify.signingKey.existingSecret=b", "set notify.existingSecret, notify.url or notify.channels too"},
		{"notify.channels[0].name=Team_A,notify.channels[0].existingSecret=a", "/notify/channels/0/name"},
		{"notify.channels[0].name=team-a", "existingSecret"},
		{"notify.channels[0].name=team-a,notify.channels[0].existingSecret=a,notify.channels[0].format=discord", "/notify/channels/0/format"},
		{"notify.channels[0].name=team-a,notify.channels[0].existingSecret=a,notify.channels[0].url=https://x", "additional properties 'url' not allowed"},
		{"freeze.ranges=2026-12-24/2026-12-26", "/freeze/ranges"},
		{"freeze.ranges={2026-12-24}", "/freeze/ranges/0"},
		{"freeze.ranges={christmas}", "/freeze/ranges/0"},
		{"freeze.timeZone=Europe Berlin", "/freeze/timeZone"},
		{"freeze.calendar={a,b}", "/freeze/calendar"},
		{"freeze.existingConfigMapKey=", "/freeze/existingConfigMapKey"},
		{"freeze.timezone=UTC", "additional properties 'timezone' not allowed"},
		{"monitoring.prometheusRule.enable=true", "additional properties 'enable' not allowed"},
		{"monitoring.prometheusrule.enabled=true", "additional properties 'prometheusrule' not allowed"},
		{"monitoring.dashboard.enabled=yes", "/monitoring/dashboard/enabled"},
		{"monitoring.dashboard.namespace=Grafana", "/monitoring/dashboard/namespace"},
		{"monitoring.prometheusRule.additionalRuleLabels.team=1", "/monitoring/prometheusRule/additionalRuleLabels/team"},
		{"freeze.existingConfigMap=a,freeze.calendar=2026-12-24/2026-12-26", "freeze: set existingConfigMap or calendar, not both"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			_, err := runHelm(ctx, t, "template", chartRelease, chartDir, "--set", tc.set)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("helm template --set %s: %v, want an error about %q", tc.set, err, tc.want)
			}
		})
	}
}

// TestHelmChartSchemaKnowsKubernetesFields: the schema lists the fields of
// the Kubernetes types that values pass through (so that a typo in them
// fails too), no more and no fewer than k8s.io/api has.
func TestHelmChartSchemaKnowsKubernetesFields(t *testing.T) {
	var s struct {
		Properties map[string]struct {
			Properties map[string]any `json:"properties"`
			Items      struct {
				Properties map[string]any `json:"properties"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(chartFile(t, "values.schema.json"), &s); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	for _, tc := range []struct {
		value string
		typ   any
	}{
		{"podSecurityContext", corev1.PodSecurityContext{}},
		{"securityContext", corev1.SecurityContext{}},
		{"resources", corev1.ResourceRequirements{}},
		{"affinity", corev1.Affinity{}},
		{"tolerations", corev1.Toleration{}},
	} {
		p := s.Properties[tc.value]
		props := p.Properties
		if tc.value == "tolerations" {
			props = p.Items.Properties
		}
		var got, want []string
		for name := range props {
			got = append(got, name)
		}
		typ := reflect.TypeOf(tc.typ)
		for i := range typ.NumField() {
			if name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
				want = append(want, name)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("schema of %s lists %q, want the fields of %s: %q", tc.value, got, typ, want)
		}
	}
}

// TestHelmChartDurationsAreTheFlags: each duration of values.schema.json
// takes what the flag it sets takes (internal/duration's Parse: a Go
// duration, weeks and days first), and refuses what it refuses, so that a
// value the chart takes is one nsman starts with.
func TestHelmChartDurationsAreTheFlags(t *testing.T) {
	var s struct {
		Properties map[string]struct {
			Pattern    string `json:"pattern"`
			Properties map[string]struct {
				Pattern string `json:"pattern"`
			} `json:"properties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(chartFile(t, "values.schema.json"), &s); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	patterns := map[string]string{}
	for _, path := range []string{"claimTTL", "maxHold", "stuckAfter", "webhook.timeout", "prometheus.timeout", "serve.maxHold"} {
		if group, key, nested := strings.Cut(path, "."); nested {
			patterns[path] = s.Properties[group].Properties[key].Pattern
		} else {
			patterns[path] = s.Properties[path].Pattern
		}
	}
	for path, pattern := range patterns {
		re, err := regexp.Compile(pattern)
		if err != nil || pattern == "" {
			t.Errorf("%s: pattern %q: %v", path, pattern, err)
			continue
		}
		if !re.MatchString("") {
			t.Errorf("%s refuses the empty value, nsman's default", path)
		}
		for _, v := range []string{"90s", "1h30m", "1.5h", "250ms", "2d", "1w", "1w2d", "1d12h", "1w2d3h4m5s", "30d",
			"2x", "2", "d", "w", "1.5d", "2d1w", "1h2d", "-1h", "-2d", "2 d", "two days", " 2d", "2d "} {
			_, parseErr := duration.Parse(v)
			if took := re.MatchString(v); took != (parseErr == nil) {
				t.Errorf("%s: the schema takes %q: %v; the flag takes it: %v (%v)", path, v, took, parseErr == nil, parseErr)
			}
		}
	}
}

// ciValues are the checks of each values file in the chart's ci/, which
// make helm-lint lints and renders too. Every file has one.
var ciValues = map[string]func(t *testing.T, r rendered){
	"dry-run-values.yaml": func(t *testing.T, r rendered) { wantArgs(t, r, "--dry-run") },
	"freeze-values.yaml": func(t *testing.T, r rendered) {
		wantArgs(t, r, freezeFileFlag, "--freeze-time-zone=Europe/Berlin")
		obj := r.find("ConfigMap")
		if obj == nil {
			t.Fatal("no ConfigMap rendered for freeze.calendar")
		}
		calendar, _, _ := unstructured.NestedString(obj.Object, "data", "calendar")
		wantCreatedFreezeCalendar(t, r, freezeConfigMap, calendar)
		freezes := parseCalendar(t, calendar, "Europe/Berlin")
		if len(freezes) < 2 {
			t.Errorf("calendar %q: %d ranges, want a few", calendar, len(freezes))
		}
	},
	monitoringValues: checkMonitoringValues,
	prometheusValues: checkPrometheusValues,
	"notify-values.yaml": func(t *testing.T, r rendered) {
		wantSecretFile(t, r, notifyURLSecret, "url", notifyURLDir, "url")
		wantArgs(t, r, notifyURLFlag, "--notify-format=slack")
		wantNotifyURLHidden(t, r, "hooks.slack.com")
	},
	"owner-delete-values.yaml": func(t *testing.T, r rendered) {
		wantArgs(t, r)
		checkOwnerDelete(t, r.cj, r.objs)
	},
	"flux-suspend-values.yaml": func(t *testing.T, r rendered) {
		wantArgs(t, r)
		checkFluxSuspend(t, r.cj, r.objs)
		wantPatchable(t, r.objs, "nsman", fluxSuspendPatchable)
	},
	"sharded-values.yaml": func(t *testing.T, r rendered) {
		wantShards(t, r, 4)
		wantArgs(t, r, "--shard-count=4")
	},
	"webhook-signing-values.yaml": func(t *testing.T, r rendered) {
		wantSigningKey(t, r, signingKeySecret, "key")
		wantArgs(t, r, signingKeyFlag)
		if s := r.find("Secret"); s != nil {
			t.Errorf("Secret %s rendered: the existing one is the user's", s.GetName())
		}
	},
	"serve-values.yaml": checkServeValues,
	"signing-key-value-values.yaml": func(t *testing.T, r rendered) {
		wantCreatedSigningKey(t, r, signingKeySecret, signingKeyValue)
	},
	"webhook-egress-values.yaml": func(t *testing.T, r rendered) {
		args := r.args(t)
		if len(args) != len(defaultArgs)+1 || !strings.HasPrefix(args[len(args)-1], webhookAllowFlag) {
			t.Fatalf("args %q, want the defaults' and %s", args, webhookAllowFlag)
		}
		if _, err := webhook.ParseAllowList(strings.Split(strings.TrimPrefix(args[len(args)-1], webhookAllowFlag), ",")); err != nil {
			t.Errorf("%s: %v", args[len(args)-1], err)
		}
		np := r.find("NetworkPolicy")
		if np == nil {
			t.Fatal("no NetworkPolicy rendered")
		}
		checkEgressPolicy(t, r.cj, []*unstructured.Unstructured{np})
		// It selects this release's pods, not another's.
		if sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels"); sel["app.kubernetes.io/instance"] != chartRelease {
			t.Errorf("podSelector %v does not tell this release's pods from another's", sel)
		}
	},
	"image-values.yaml": func(t *testing.T, r rendered) {
		c := r.container(t)
		if want := "registry.example.com/platform/nsman@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"; c.Image != want {
			t.Errorf("image %s, want %s", c.Image, want)
		}
		if c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("imagePullPolicy %q, want IfNotPresent", c.ImagePullPolicy)
		}
		if s := r.pod().ImagePullSecrets; !slices.Equal(s, []corev1.LocalObjectReference{{Name: "registry-example-com"}}) {
			t.Errorf("imagePullSecrets %+v, want registry-example-com", s)
		}
	},
	"sweep-values.yaml": func(t *testing.T, r rendered) {
		if r.cj.Spec.Schedule != "*/5 * * * *" || !ptr.Deref(r.cj.Spec.Suspend, false) {
			t.Errorf("schedule %q, suspend %v, want */5 * * * * and true", r.cj.Spec.Schedule, ptrString(r.cj.Spec.Suspend))
		}
		want := []string{"sweep", "--log-format=text", "--log-level=debug", "--max-actions=10", "--concurrency=4",
			"--chunk-size=250", "--claim-ttl=2m", "--max-hold=48h", "--stuck-after=30m", "--argocd-namespace=gitops", "--reclaim=false", "--webhook-timeout=5s",
			"--trusted-namespaces=namespace-manager,ci-managers", "--protected-namespaces=default,namespace-manager,production",
			"--freeze=2025-12-24/2025-12-26", "--freeze=2026-04-03T18:00:00+02:00/2026-04-06T23:59:59+02:00", "--freeze-time-zone=America/New_York",
			"--pushgateway-url=http://pushgateway.monitoring.svc:9091", "--qps=100"}
		if got := r.args(t); !slices.Equal(got, want) {
			t.Errorf("args %q, want %q", got, want)
		}
	},
	"scheduling-values.yaml": func(t *testing.T, r rendered) {
		want := corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		}
		if got := r.container(t).Resources; !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("resources %+v, want %+v", got, want)
		}
		p := r.pod()
		if want := map[string]string{"kubernetes.io/os": "linux", "node-role.example.com/system": "true"}; !reflect.DeepEqual(p.NodeSelector, want) {
			t.Errorf("nodeSelector %v, want %v", p.NodeSelector, want)
		}
		if want := []corev1.Toleration{{Key: "node-role.example.com/system", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}; !slices.Equal(p.Tolerations, want) {
			t.Errorf("tolerations %+v, want %+v", p.Tolerations, want)
		}
		if p.Affinity == nil || p.Affinity.NodeAffinity == nil || len(p.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
			t.Errorf("affinity %+v, want the preferred zone", p.Affinity)
		}
	},
	"metadata-values.yaml": func(t *testing.T, r rendered) {
		for _, o := range r.objs {
			if o.GetKind() == "CustomResourceDefinition" {
				continue
			}
			want := "namespace-sweeper"
			if (o.GetKind() == policyKind || o.GetKind() == bindingKind) && strings.HasSuffix(o.GetName(), recordsSuffix) {
				want += recordsSuffix // the records policy, beside the fence
			}
			if o.GetKind() == "ClusterRole" && strings.HasPrefix(o.GetName(), want+"-") {
				if role := strings.TrimPrefix(o.GetName(), want+"-"); role == "edit" || role == "view" {
					want = o.GetName() // the roles for the built-in edit and view
				}
			}
			if o.GetName() != want {
				t.Errorf("%s, want it named %s", identity(o), want)
			}
			if o.GetLabels()["team"] != "platform" || o.GetAnnotations()["example.com/owner"] != "platform-team" {
				t.Errorf("%s: labels %v, annotations %v: want commonLabels and commonAnnotations", identity(o), o.GetLabels(), o.GetAnnotations())
			}
		}
		if sa := r.pod().ServiceAccountName; sa != "namespace-sweeper" {
			t.Errorf("serviceAccountName %s, want namespace-sweeper", sa)
		}
		obj := r.find("ClusterRoleBinding")
		if obj == nil {
			t.Fatal("no ClusterRoleBinding rendered")
		}
		binding := &rbacv1.ClusterRoleBinding{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, binding); err != nil {
			t.Fatal(err)
		}
		if binding.RoleRef.Name != "namespace-sweeper" || len(binding.Subjects) != 1 || binding.Subjects[0].Name != "namespace-sweeper" || binding.Subjects[0].Namespace != chartNamespace {
			t.Errorf("ClusterRoleBinding roleRef %+v subjects %+v, want namespace-sweeper's", binding.RoleRef, binding.Subjects)
		}
		tmpl := r.cj.Spec.JobTemplate.Spec.Template
		if tmpl.Labels["example.com/cost-center"] != "42" || tmpl.Labels["team"] != "platform" || tmpl.Annotations["example.com/scrape"] != "false" || tmpl.Annotations["example.com/owner"] != "platform-team" {
			t.Errorf("pod labels %v, annotations %v: want podLabels, podAnnotations and the common ones", tmpl.Labels, tmpl.Annotations)
		}
		if tmpl.Labels["app.kubernetes.io/name"] != "nsman" || tmpl.Labels["app.kubernetes.io/instance"] != chartRelease {
			t.Errorf("pod labels %v lack the chart's", tmpl.Labels)
		}
	},
	"security-context-values.yaml": func(t *testing.T, r rendered) {
		sc := r.pod().SecurityContext
		if sc == nil || sc.RunAsUser != nil || sc.RunAsGroup != nil || sc.FSGroup != nil {
			t.Fatalf("pod securityContext %+v, want runAsUser, runAsGroup and fsGroup dropped", sc)
		}
		if !ptr.Deref(sc.RunAsNonRoot, false) || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("pod securityContext %+v, want runAsNonRoot and RuntimeDefault kept", sc)
		}
		c := r.container(t).SecurityContext
		if c == nil || c.SeccompProfile == nil || !ptr.Deref(c.ReadOnlyRootFilesystem, false) || ptr.Deref(c.AllowPrivilegeEscalation, true) {
			t.Errorf("container securityContext %+v, want the seccompProfile added to the defaults", c)
		}
	},
}

// renderedResources are the resources of the kinds the chart renders, and
// whether they are namespaced.
var renderedResources = map[schema.GroupVersionKind]struct {
	resource   schema.GroupVersionResource
	namespaced bool
}{
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}: {crdResource, false},
	rbacv1.SchemeGroupVersion.WithKind("ClusterRole"):                                {rbacv1.SchemeGroupVersion.WithResource("clusterroles"), false},
	rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"):                         {rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"), false},
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"):                             {corev1.SchemeGroupVersion.WithResource("serviceaccounts"), true},
	corev1.SchemeGroupVersion.WithKind("Secret"):                                     {corev1.SchemeGroupVersion.WithResource("secrets"), true},
	corev1.SchemeGroupVersion.WithKind("ConfigMap"):                                  {corev1.SchemeGroupVersion.WithResource("configmaps"), true},
	batchv1.SchemeGroupVersion.WithKind("CronJob"):                                   {cronJobResource, true},
	appsv1.SchemeGroupVersion.WithKind("Deployment"):                                 {appsv1.SchemeGroupVersion.WithResource("deployments"), true},
	corev1.SchemeGroupVersion.WithKind("Service"):                                    {corev1.SchemeGroupVersion.WithResource("services"), true},
	networkingv1.SchemeGroupVersion.WithKind("Ingress"):                              {networkingv1.SchemeGroupVersion.WithResource("ingresses"), true},
	networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"):                        {networkingv1.SchemeGroupVersion.WithResource("networkpolicies"), true},
	admissionregistrationv1.SchemeGroupVersion.WithKind(policyKind):                  {policyResource, false},
	admissionregistrationv1.SchemeGroupVersion.WithKind(bindingKind):                 {bindingResource, false},
}

// admitDryRun creates every rendered object as admin, persisting nothing,
// with strict field validation, the namespaced ones in namespace, and
// fails t on a refusal or a warning. An object that exists already
// (AlreadyExists comes after validation and admission) passed them.
func admitDryRun(ctx context.Context, t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured, namespace string) {
	t.Helper()
	for _, o := range objs {
		r, ok := renderedResources[o.GroupVersionKind()]
		if !ok {
			t.Fatalf("%s: no resource known for %s", identity(o), o.GroupVersionKind())
		}
		c := rest.CopyConfig(cfg)
		w := &warnings{}
		c.WarningHandlerWithContext = w
		client, err := dynamic.NewForConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		var ri dynamic.ResourceInterface = client.Resource(r.resource)
		obj := o.DeepCopy()
		if r.namespaced {
			obj.SetNamespace(namespace)
			ri = client.Resource(r.resource).Namespace(namespace)
		}
		_, err = ri.Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Errorf("%s refused: %v", identity(o), err)
		}
		if len(w.all()) > 0 {
			t.Errorf("%s drew warnings: %q", identity(o), w.all())
		}
	}
}

// TestHelmChartValuesFiles renders the chart with each values file of its
// ci/ and checks what the file changes; that every object is accepted by
// the API server, the pods under Pod Security "restricted"; and that
// nsman takes the arguments (a dry run with them, as the deploy/base
// ServiceAccount).
func TestHelmChartValuesFiles(t *testing.T) {
	e := setup(t)
	files, err := filepath.Glob(filepath.Join(nsmantest.RepoRoot(), chartDir, "ci", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	var checked []string
	for name := range ciValues {
		checked = append(checked, name)
	}
	slices.Sort(checked)
	if !slices.Equal(names, checked) {
		t.Fatalf("ci/ holds %q, checks are for %q: each values file needs its checks", names, checked)
	}
	restricted := restrictedNamespace(t)
	empty := shared.Namespace(t)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			r := render(t, "-f", filepath.Join(chartDir, "ci", name))
			ciValues[name](t, r)

			admitDryRun(ctx, t, shared.AdminConfig, withoutPrometheusRules(r.objs), restricted)
			if err := createPodDryRun(ctx, restricted, podFrom(r.cj)); err != nil {
				t.Fatalf("pod rejected under Pod Security restricted: %v", err)
			}

			// The arguments as nsman takes them. What exists only in the
			// pod is replaced: the key, URL, token and CA files by the test's, the
			// freeze calendar by a file of the rendered ConfigMap's, the
			// Pushgateway by a server that counts pushes.
			var pushes atomic.Int32
			gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { pushes.Add(1) }))
			defer gateway.Close()
			keyFile := filepath.Join(t.TempDir(), "key")
			if err := os.WriteFile(keyFile, []byte(signingKeyValue), 0o600); err != nil {
				t.Fatal(err)
			}
			tokenFile, caFile := prometheusFiles(t)
			urlFile := filepath.Join(t.TempDir(), "url")
			if err := os.WriteFile(urlFile, []byte("https://hooks.slack.com/services/REPLACE/ME\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			args := r.args(t)
			if args[0] != "sweep" {
				t.Fatalf("args %q, want the sweep command first", args)
			}
			var run []string
			for _, a := range args[1:] {
				switch {
				case a == signingKeyFlag:
					a = "--webhook-signing-key-file=" + keyFile
				case a == notifyURLFlag:
					a = "--notify-url-file=" + urlFile
				case a == notifyKeyFlag:
					a = "--notify-signing-key-file=" + keyFile
				case a == linksKeyFlag:
					a = "--links-signing-key-file=" + keyFile
				case a == promTokenFlag:
					a = "--prometheus-token-file=" + tokenFile
				case a == promCAFlag:
					a = "--prometheus-ca-file=" + caFile
				case a == freezeFileFlag:
					obj := r.find("ConfigMap")
					if obj == nil {
						t.Fatalf("%s without a ConfigMap rendered", a)
					}
					calendar, _, _ := unstructured.NestedString(obj.Object, "data", "calendar")
					a = "--freeze-file=" + writeCalendar(t, calendar)
				case strings.HasPrefix(a, "--pushgateway-url="):
					a = "--pushgateway-url=" + gateway.URL
				}
				run = append(run, a)
			}
			res := e.Sweep(t, append(run, "--dry-run", "-n", empty)...)
			wantCode(t, res, 0)
			if !res.Report.Summary.DryRun {
				t.Error("the sweep was no dry run")
			}
			if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--pushgateway-url=") }) && pushes.Load() == 0 {
				t.Error("--pushgateway-url given, no push arrived")
			}
		})
	}
}

// docsValueRow is a row of docs/helm.md's values table: | `path` | `default` | ... |
var docsValueRow = regexp.MustCompile("^\\| `([A-Za-z0-9.]+)` \\| ([^|]*) \\|")

// TestHelmDocsDescribeEveryValue: docs/helm.md's table names every value
// of values.yaml and no other, with its default where that is a scalar or
// an empty list or map.
func TestHelmDocsDescribeEveryValue(t *testing.T) {
	var values map[string]any
	if err := utilyaml.Unmarshal(chartFile(t, "values.yaml"), &values); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	docs, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "docs", "helm.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for line := range strings.SplitSeq(string(docs), "\n") {
		if m := docsValueRow.FindStringSubmatch(line); m != nil {
			rows[m[1]] = strings.TrimSpace(m[2])
		}
	}
	if len(rows) == 0 {
		t.Fatal("docs/helm.md: no values table")
	}
	// lookup finds path in values.
	lookup := func(path string) (any, bool) {
		var v any = values
		for part := range strings.SplitSeq(path, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[part]; !ok {
				return nil, false
			}
		}
		return v, true
	}
	for path, def := range rows {
		v, ok := lookup(path)
		if !ok {
			t.Errorf("docs/helm.md describes %s, which values.yaml lacks", path)
			continue
		}
		if m, isMap := v.(map[string]any); isMap && len(m) > 0 {
			continue // a group, or a Kubernetes object whose default the text gives
		}
		if l, isList := v.([]any); isList && len(l) > 0 {
			continue
		}
		want, _ := json.Marshal(v)
		if def != "`"+string(want)+"`" {
			t.Errorf("docs/helm.md: %s defaults to %s, values.yaml to `%s`", path, def, want)
		}
	}
	// Every leaf of values.yaml is in a row, itself or a group above it.
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if prefix != "" {
			if _, ok := rows[prefix]; ok {
				return
			}
		}
		m, isMap := v.(map[string]any)
		if !isMap || len(m) == 0 {
			t.Errorf("docs/helm.md does not describe %s", prefix)
			return
		}
		for k, sub := range m {
			walk(strings.TrimPrefix(prefix+"."+k, "."), sub)
		}
	}
	walk("", values)
}

// kustomize.md's recipe to remove nsman but keep the managers deletes
// every object deploy/ installs but the CRD and the namespace that holds
// the managers: no more (a manager lost), no fewer (nsman left running).
func TestKustomizeUninstallRecipeKeepsTheManagers(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(nsmantest.RepoRoot(), "docs", "kustomize.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, "delete its other objects alone:")
	if start < 0 {
		t.Fatal("kustomize.md has no recipe to remove nsman but keep the managers")
	}
	kinds := map[string]string{
		"cronjob": "CronJob", "serviceaccount": "ServiceAccount", "clusterrole": "ClusterRole", "clusterrolebinding": "ClusterRoleBinding",
		"validatingadmissionpolicy": "ValidatingAdmissionPolicy", "validatingadmissionpolicybinding": "ValidatingAdmissionPolicyBinding",
		"namespace": "Namespace", "customresourcedefinition": "CustomResourceDefinition",
	}
	var deleted []string
	block := strings.SplitN(doc[start:], "```", 3)[1]
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		f := strings.Fields(line)
		ns := ""
		if len(f) > 2 && f[1] == "-n" {
			ns, f = f[2], append(f[:1:1], f[3:]...)
		}
		if len(f) != 4 || f[0] != "kubectl" || f[1] != "delete" || kinds[f[2]] == "" {
			t.Fatalf("recipe line %q: want kubectl [-n NAMESPACE] delete KIND NAME", line)
		}
		deleted = append(deleted, kinds[f[2]]+" "+ns+"/"+f[3])
	}
	slices.Sort(deleted)
	want := slices.DeleteFunc(identities(deployBase(t)), func(id string) bool {
		return strings.HasPrefix(id, "CustomResourceDefinition ") || strings.HasPrefix(id, "Namespace ")
	})
	if !slices.Equal(deleted, want) {
		t.Errorf("the recipe deletes\n  %q\nwant every object of deploy/ but the CRD and the Namespace\n  %q", deleted, want)
	}
}
