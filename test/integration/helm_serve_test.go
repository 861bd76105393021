package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nsman/nsman/cmd"
	nsmancluster "github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/links"
	"github.com/nsman/nsman/policy"
	"github.com/nsman/nsman/test/cluster"
)

// The key that signs links, as the chart mounts it in the sweeps' pods and
// in serve's, and the URL ci/serve-values.yaml reaches serve at.
const (
	linksKeyDir    = "/etc/nsman/links"
	linksKeyFlag   = "--links-signing-key-file=" + linksKeyDir + "/key"
	serveLinksURL  = "https://nsman.example.com"
	serveComponent = "app.kubernetes.io/component"
)

// typedObject converts a rendered object to its Kubernetes type, refusing
// a field the type lacks.
func typedObject[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	v := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, v, true); err != nil {
		t.Fatalf("%s: %v", identity(o), err)
	}
	return v
}

// serveRendered is what the chart renders of nsman serve.
type serveRendered struct {
	deploy  *appsv1.Deployment
	svc     *corev1.Service
	role    *rbacv1.ClusterRole
	binding *rbacv1.ClusterRoleBinding
	policy  *admissionregistrationv1.ValidatingAdmissionPolicy
	ingress *networkingv1.Ingress // nil without serve.ingress.enabled
}

// serveObjects finds serve's objects, named name, among r's, and checks
// that nothing else is rendered for serve.
func serveObjects(t *testing.T, r rendered, name string) serveRendered {
	t.Helper()
	var s serveRendered
	want := []string{"ClusterRole /" + name, "ClusterRoleBinding /" + name, "Deployment " + chartNamespace + "/" + name, "Service " + chartNamespace + "/" + name,
		"ServiceAccount " + chartNamespace + "/" + name, policyKind + " /" + name, bindingKind + " /" + name}
	var got []string
	for _, o := range r.objs {
		if o.GetLabels()[serveComponent] != "serve" {
			continue
		}
		got = append(got, identity(o))
		switch o.GetKind() {
		case "Deployment":
			s.deploy = typedObject[appsv1.Deployment](t, o)
		case "Service":
			s.svc = typedObject[corev1.Service](t, o)
		case "ClusterRole":
			s.role = typedObject[rbacv1.ClusterRole](t, o)
		case "ClusterRoleBinding":
			s.binding = typedObject[rbacv1.ClusterRoleBinding](t, o)
		case policyKind:
			s.policy = typedPolicy(t, o)
		case "Ingress":
			s.ingress = typedObject[networkingv1.Ingress](t, o)
			want = append(want, "Ingress "+chartNamespace+"/"+name)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("serve's objects %q, want %q", got, want)
	}
	return s
}

// wantServe checks serve's objects named name: one replica of the
// CronJob's image, with its security contexts, running args, probed on
// /healthz, the key of Secret secret at item mounted as the sweeps mount
// it and in no other way; a Service to serve's pods alone; a
// ServiceAccount that may get and patch namespaces and nothing else, and
// the fence around it.
func wantServe(t *testing.T, r rendered, name, secret, item string, args []string) serveRendered {
	t.Helper()
	s := serveObjects(t, r, name)
	d := s.deploy
	if ptr.Deref(d.Spec.Replicas, 0) != 1 {
		t.Errorf("replicas %v, want 1: serve counts a link's writes in memory", ptrString(d.Spec.Replicas))
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != name || !ptr.Deref(pod.AutomountServiceAccountToken, false) {
		t.Errorf("serviceAccountName %q, automount %v, want %s's token", pod.ServiceAccountName, ptrString(pod.AutomountServiceAccountToken), name)
	}
	if !equality.Semantic.DeepEqual(pod.SecurityContext, r.pod().SecurityContext) {
		t.Errorf("pod securityContext %+v, want the sweeps' %+v", pod.SecurityContext, r.pod().SecurityContext)
	}
	if len(pod.Containers) != 1 || len(pod.InitContainers) > 0 {
		t.Fatalf("containers %+v, want serve alone", pod.Containers)
	}
	c, sweep := pod.Containers[0], r.container(t)
	if c.Image != sweep.Image || !equality.Semantic.DeepEqual(c.SecurityContext, sweep.SecurityContext) {
		t.Errorf("image %s, securityContext %+v, want the sweeps' %s, %+v", c.Image, c.SecurityContext, sweep.Image, sweep.SecurityContext)
	}
	if !slices.Equal(c.Args, args) {
		t.Errorf("serve's args %q, want %q", c.Args, args)
	}
	if want := []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}; !slices.Equal(c.Ports, want) {
		t.Errorf("ports %+v, want %+v", c.Ports, want)
	}
	for what, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port != intstr.FromString("http") {
			t.Errorf("%s probe %+v, want GET /healthz on http", what, p)
		}
	}
	if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("resources %+v, want requests and limits", c.Resources)
	}
	if len(c.Env) > 0 || len(c.EnvFrom) > 0 {
		t.Errorf("env %+v, envFrom %+v: want none (the key is a file)", c.Env, c.EnvFrom)
	}
	vol := corev1.Volume{Name: "links-signing-key", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, Items: []corev1.KeyToPath{{Key: item, Path: "key"}}, DefaultMode: ptr.To[int32](0o440)}}}
	if !equality.Semantic.DeepEqual(pod.Volumes, []corev1.Volume{vol}) {
		t.Errorf("volumes %+v, want Secret %s's %s alone, mode 0440", pod.Volumes, secret, item)
	}
	if want := []corev1.VolumeMount{{Name: vol.Name, MountPath: linksKeyDir, ReadOnly: true}}; !slices.Equal(c.VolumeMounts, want) {
		t.Errorf("mounts %+v, want %+v", c.VolumeMounts, want)
	}
	// The sweeps sign with the same Secret's key.
	wantSecretFile(t, r, secret, item, linksKeyDir, "key")

	// The Service reaches serve's pods, never a sweep's.
	sel := s.svc.Spec.Selector
	if !equality.Semantic.DeepEqual(d.Spec.Selector, &metav1.LabelSelector{MatchLabels: sel}) {
		t.Errorf("Deployment selector %+v, Service selector %v: want the same", d.Spec.Selector, sel)
	}
	matches := func(labels map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	if !matches(d.Spec.Template.Labels) || matches(r.cj.Spec.JobTemplate.Spec.Template.Labels) {
		t.Errorf("Service selector %v: want serve's pods (%v), not the sweeps' (%v)", sel, d.Spec.Template.Labels, r.cj.Spec.JobTemplate.Spec.Template.Labels)
	}
	if p := s.svc.Spec.Ports; len(p) != 1 || p[0].Port != 80 || p[0].TargetPort != intstr.FromString("http") || p[0].Name != "http" {
		t.Errorf("Service ports %+v, want 80 to http", p)
	}

	// Its ServiceAccount may get and patch namespaces, and nothing else.
	if want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "patch"}}}; !equality.Semantic.DeepEqual(s.role.Rules, want) {
		t.Errorf("ClusterRole rules %+v, want %+v", s.role.Rules, want)
	}
	if s.binding.RoleRef.Name != name || !slices.Equal(s.binding.Subjects, []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: chartNamespace}}) {
		t.Errorf("ClusterRoleBinding roleRef %+v subjects %+v, want %s's", s.binding.RoleRef, s.binding.Subjects, name)
	}
	wantServeFence(t, s.policy, findNamed(t, r.objs, bindingKind, name), name)
	return s
}

// wantServeFence checks that the serve's policy matches its ServiceAccount
// alone, lets it write the annotations nsman hold and nsman wake write,
// and is bound to deny.
func wantServeFence(t *testing.T, p *admissionregistrationv1.ValidatingAdmissionPolicy, binding *unstructured.Unstructured, name string) {
	t.Helper()
	if c := p.Spec.MatchConditions; len(c) != 1 || c[0].Expression != usernameCondition(chartNamespace, name) {
		t.Errorf("matchConditions %+v, want %s's ServiceAccount alone", c, name)
	}
	if ptr.Deref(p.Spec.FailurePolicy, "") != admissionregistrationv1.Fail {
		t.Errorf("failurePolicy %v, want Fail", ptrString(p.Spec.FailurePolicy))
	}
	want := celList([]string{status.HoldAnnotation, policy.WakeAnnotation})
	if v := p.Spec.Variables; len(v) == 0 || v[0].Name != "writable" || v[0].Expression != want {
		t.Errorf("variables %+v, want writable %s first", v, want)
	}
	b := typedObject[admissionregistrationv1.ValidatingAdmissionPolicyBinding](t, binding)
	if b.Spec.PolicyName != name || !slices.Equal(b.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
		t.Errorf("binding %+v, want %s, Deny", b.Spec, name)
	}
}

// wantKeyOnlyInSecret checks that key is in the Secret named secret, as
// its data, and in no other object: no argument, no environment variable,
// no ConfigMap, no annotation, neither as it is nor base64-encoded.
func wantKeyOnlyInSecret(t *testing.T, objs []*unstructured.Unstructured, secret, key string) {
	t.Helper()
	found := false
	for _, o := range objs {
		if o.GetKind() == "Secret" && o.GetName() == secret {
			s := typedObject[corev1.Secret](t, o)
			found = len(s.Data) == 1 && string(s.Data["key"]) == key && len(s.StringData) == 0
			continue
		}
		data, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte(key)) || bytes.Contains(data, []byte(base64.StdEncoding.EncodeToString([]byte(key)))) {
			t.Errorf("%s holds the links' signing key", identity(o))
		}
	}
	if !found {
		t.Errorf("no Secret %s holding the key alone", secret)
	}
}

// checkServeValues checks ci/serve-values.yaml: serve behind ingress-nginx
// and oauth2-proxy, the key from a Secret you create, the sweeps' links.
func checkServeValues(t *testing.T, r rendered) {
	wantArgs(t, r, "--max-hold=336h", notifyURLFlag, "--notify-format=slack", "--links-url="+serveLinksURL, linksKeyFlag)
	s := wantServe(t, r, "nsman-serve", "nsman-links-signing-key", "key", []string{"serve", "--listen=:8080", linksKeyFlag,
		"--links-url=" + serveLinksURL, "--max-hold=168h", "--user-header=X-Auth-Request-Email", "--log-format=json"})
	if sec := r.find("Secret"); sec != nil {
		t.Errorf("Secret %s rendered: the existing one is the user's", sec.GetName())
	}
	in := s.ingress
	if in == nil {
		t.Fatal("no Ingress rendered")
	}
	if ptr.Deref(in.Spec.IngressClassName, "") != "nginx" {
		t.Errorf("ingressClassName %v, want nginx", ptrString(in.Spec.IngressClassName))
	}
	if want := []networkingv1.IngressTLS{{Hosts: []string{"nsman.example.com"}, SecretName: "nsman-serve-tls"}}; !equality.Semantic.DeepEqual(in.Spec.TLS, want) {
		t.Errorf("tls %+v, want %+v", in.Spec.TLS, want)
	}
	if a := in.Annotations; a["nginx.ingress.kubernetes.io/auth-response-headers"] != "X-Auth-Request-Email" || a["nginx.ingress.kubernetes.io/auth-url"] == "" {
		t.Errorf("annotations %v, want ingress-nginx's external auth", a)
	}
	wantIngressTo(t, in, "nsman.example.com", "nsman-serve")
}

// wantIngressTo checks that in sends every path of host to service's http.
func wantIngressTo(t *testing.T, in *networkingv1.Ingress, host, service string) {
	t.Helper()
	rules := in.Spec.Rules
	if len(rules) != 1 || rules[0].Host != host || rules[0].HTTP == nil || len(rules[0].HTTP.Paths) != 1 {
		t.Fatalf("rules %+v, want one for %s", rules, host)
	}
	p := rules[0].HTTP.Paths[0]
	if p.Path != "/" || ptr.Deref(p.PathType, "") != networkingv1.PathTypePrefix || p.Backend.Service == nil ||
		p.Backend.Service.Name != service || p.Backend.Service.Port.Name != "http" {
		t.Errorf("path %+v, want / (Prefix) to %s's http", p, service)
	}
}

// TestHelmChartServe: without serve.enabled nothing of serve renders, nor
// any link; with it, serve's Deployment, Service, ServiceAccount, RBAC and
// fence (and the Ingress with serve.ingress.enabled), the sweeps given
// --links-url and the key, the key a Secret's only; values that cannot
// work are refused, saying why.
func TestHelmChartServe(t *testing.T) {
	t.Run("off", func(t *testing.T) {
		r := render(t)
		for _, o := range r.objs {
			if o.GetLabels()[serveComponent] != "" || strings.Contains(o.GetName(), "serve") || strings.Contains(o.GetName(), "links") {
				t.Errorf("%s rendered without serve.enabled", identity(o))
			}
			if k := o.GetKind(); k == "Deployment" || k == "Service" || k == "Ingress" {
				t.Errorf("%s rendered without serve.enabled", identity(o))
			}
		}
		if slices.ContainsFunc(r.args(t), func(a string) bool { return strings.HasPrefix(a, "--links-") }) {
			t.Errorf("args %q: links without serve.enabled", r.args(t))
		}
	})

	const key = "0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff"
	on := []string{"--set", "serve.enabled=true,serve.linksURL=https://links.example.com:8443/nsman,fullnameOverride=sweeper,maxHold=48h", "--set-string", "serve.signingKey.value=" + key}
	t.Run("a key the chart keeps", func(t *testing.T) {
		r := render(t, on...)
		wantArgs(t, r, "--max-hold=48h", "--links-url=https://links.example.com:8443/nsman", linksKeyFlag)
		// serve's cap follows the sweeps' where it has none of its own.
		s := wantServe(t, r, "sweeper-serve", "sweeper-links-signing-key", "key", []string{"serve", "--listen=:8080", linksKeyFlag,
			"--links-url=https://links.example.com:8443/nsman", "--max-hold=48h", "--log-format=json"})
		if s.ingress != nil {
			t.Error("an Ingress without serve.ingress.enabled")
		}
		wantKeyOnlyInSecret(t, r.objs, "sweeper-links-signing-key", key)
	})

	t.Run("the key of a Secret of yours, an Ingress to linksURL's host", func(t *testing.T) {
		r := render(t, "--set", "serve.enabled=true,serve.linksURL=https://links.example.com:8443,serve.signingKey.existingSecret=links,serve.signingKey.existingSecretKey=hmac,serve.ingress.enabled=true,serve.maxHold=1w2d")
		wantArgs(t, r, "--links-url=https://links.example.com:8443", linksKeyFlag)
		s := wantServe(t, r, "nsman-serve", "links", "hmac", []string{"serve", "--listen=:8080", linksKeyFlag, "--links-url=https://links.example.com:8443", "--max-hold=1w2d", "--log-format=json"})
		if s.ingress == nil {
			t.Fatal("no Ingress with serve.ingress.enabled")
		}
		wantIngressTo(t, s.ingress, "links.example.com", "nsman-serve")
		if s.ingress.Spec.IngressClassName != nil || len(s.ingress.Spec.TLS) > 0 {
			t.Errorf("ingressClassName %v, tls %+v: want neither unless set", ptrString(s.ingress.Spec.IngressClassName), s.ingress.Spec.TLS)
		}
	})

	t.Run("no fence without admissionPolicy", func(t *testing.T) {
		r := render(t, append(on, "--set", "admissionPolicy.enabled=false")...)
		for _, o := range r.objs {
			if o.GetKind() == policyKind || o.GetKind() == bindingKind {
				if o.GetName() == "sweeper-serve" {
					t.Errorf("%s rendered with admissionPolicy.enabled false", identity(o))
				}
			}
		}
	})

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct{ set, want string }{
		{"serve.enabled=true,serve.linksURL=https://a.example.com", "serve.enabled: set serve.signingKey.existingSecret"},
		{"serve.enabled=true,serve.signingKey.existingSecret=a", "serve.enabled: set serve.linksURL"},
		{"serve.enabled=true,serve.linksURL=https://a.example.com,serve.signingKey.existingSecret=a,serve.signingKey.value=b", "serve.signingKey: set existingSecret or value, not both"},
		{"serve.enabled=true,serve.linksURL=https://a.example.com,serve.signingKey.existingSecret=a,serve.ingress.enabled=true,serve.ingress.host=b.example.com",
			`serve.ingress.host "b.example.com" is not the host of serve.linksURL ("a.example.com")`},
		{"serve.linksURL=nsman.example.com", "/serve/linksURL"},
		{"serve.linksURL=https://nsman.example.com/?a=b", "/serve/linksURL"},
		{"serve.maxHold=7 days", "/serve/maxHold"},
		{"serve.maxHold=2x", "/serve/maxHold"},
		{"serve.userHeader=X Email", "/serve/userHeader"},
		{"serve.replicas=2", "additional properties 'replicas' not allowed"},
		{"serve.ingress.hosts=a", "additional properties 'hosts' not allowed"},
		{"serve.signingKey.existingSecretKey=", "/serve/signingKey/existingSecretKey"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			_, err := runHelm(ctx, t, "template", chartRelease, chartDir, "--set", tc.set)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template --set %s: %v, want it refused: %q", tc.set, err, tc.want)
			}
		})
	}
}

// startChartServe runs nsman serve in this process with the arguments the
// chart's Deployment gives it, but --listen (loopback) and the key's file
// (keyFile), as the user of kubeconfig, until t ends; it returns its URL
// once /healthz answers.
func startChartServe(t *testing.T, args []string, keyFile, kubeconfig string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var run []string
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--listen="):
			a = "--listen=" + addr
		case a == linksKeyFlag:
			a = "--links-signing-key-file=" + keyFile
		}
		run = append(run, a)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() { done <- cmd.Execute(ctx, append(run, "--kubeconfig", kubeconfig), os.Stderr, &stderr) }()
	t.Cleanup(func() {
		stop()
		if code := <-done; code != 0 {
			t.Errorf("nsman serve %q: exit %d\n%s", run, code, stderr.String())
		}
	})
	base := "http://" + addr
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("nsman serve %q does not answer /healthz: %v\n%s", run, err, stderr.String())
	}
	return base
}

// pressFrom opens link and posts its page's form as a browser on a page of
// origin would.
func pressFrom(t *testing.T, link, origin string) (int, string) {
	t.Helper()
	code, page := fetch(t, http.MethodGet, link, "", "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", link, code, page)
	}
	form := url.Values{}
	for _, m := range regexp.MustCompile(`name="([tf])" value="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		form.Set(m[1], m[2])
	}
	return fetch(t, http.MethodPost, link, form.Encode(), origin)
}

// TestHelmChartServeFenceOnTheControlPlane applies the ServiceAccount,
// RBAC and admission policy the chart renders for serve, then acts as
// that ServiceAccount (its own token): it may write the hold and the wake
// of a namespace, to a time, and nsman serve, run with the Deployment's
// arguments, writes a link's hold through them; it may not delete a
// namespace, nor list, create or touch anything else (RBAC), and were it
// granted more, the fence would still refuse a DELETE, another resource, a
// subresource, a label, any other annotation (nsman's own too), a hold
// removed or set to something else than a time.
func TestHelmChartServeFenceOnTheControlPlane(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	const fullname, name = "nsman-serve-test", "nsman-serve-test-serve"
	const linksURL, key = "https://links.example.com", "the key that signs the links of the fence test"
	objs := helmTemplate(t, "--set", "fullnameOverride="+fullname+",serve.enabled=true,serve.linksURL="+linksURL+",serve.userHeader=X-Forwarded-Email",
		"--set-string", "serve.signingKey.value="+key)
	r := rendered{objs: objs, cj: typedCronJob(t, cronJobObject(t, objs))}
	s := serveObjects(t, r, name)
	kinds := map[string]bool{"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, policyKind: true, bindingKind: true}
	for _, o := range objs {
		if !kinds[o.GetKind()] || o.GetName() != name {
			continue
		}
		data, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		e.Apply(t, data)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = e.Dynamic.Resource(bindingResource).Delete(ctx, name, metav1.DeleteOptions{})
		_ = e.Dynamic.Resource(policyResource).Delete(ctx, name, metav1.DeleteOptions{})
		_ = shared.Admin.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = shared.Admin.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
		_ = shared.Admin.CoreV1().ServiceAccounts(chartNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	})
	cfg, err := shared.ServiceAccountConfig(ctx, chartNamespace, name)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "serve.kubeconfig")
	if err := cluster.WriteKubeconfig(kubeconfig, cfg); err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := shared.Namespace(t)
	if _, err := shared.Admin.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType,
		mergePatch(map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "a"}, "annotations": map[string]any{"example.com/owner": "a"}}}), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := func(ctx context.Context, p map[string]any, opts metav1.PatchOptions) error {
		_, err := kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, mergePatch(p), opts)
		return err
	}
	fence := "ValidatingAdmissionPolicy '" + name + "'"
	// In force once it refuses a label (a dry run), which RBAC lets
	// through.
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = patch(ctx, map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "b"}}}, metav1.PatchOptions{DryRun: dryRun})
		return apierrors.IsForbidden(last) && strings.Contains(last.Error(), fence), nil
	}); err != nil {
		t.Fatalf("serve's fence does not refuse a label: %v (%v)", last, err)
	}

	// The hold and the wake, to a time, as nsman hold and wake write them.
	inAnHour := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	for _, k := range []string{status.HoldAnnotation, policy.WakeAnnotation} {
		if err := patch(ctx, annotated(map[string]any{k: inAnHour}, nil), metav1.PatchOptions{}); err != nil {
			t.Errorf("%s set by serve's ServiceAccount: %v", k, err)
		}
	}

	// nsman serve, with the Deployment's arguments, as that ServiceAccount:
	// a link's button holds the namespace a day.
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	base := startChartServe(t, s.deploy.Spec.Template.Spec.Containers[0].Args, keyFile, kubeconfig)
	got, err := shared.Admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := links.Link{Namespace: ns, UID: string(got.UID), Action: links.Extend, Duration: 24 * time.Hour, Expires: time.Now().Add(time.Hour)}
	before := time.Now()
	if code, page := pressFrom(t, links.URL(base, links.Sign([]byte(key), l)), linksURL); code != http.StatusOK || !strings.Contains(page, "is held until") {
		t.Fatalf("the link's button: %d %s", code, page)
	}
	if got, err = shared.Admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if until, err := time.Parse(time.RFC3339, got.Annotations[status.HoldAnnotation]); err != nil || until.Before(before.Add(24*time.Hour).Add(-time.Second)) {
		t.Errorf("hold %q after the button: want a day from the press", got.Annotations[status.HoldAnnotation])
	}
	if got.Labels["team"] != "a" || got.Annotations["example.com/owner"] != "a" || got.Annotations[policy.WakeAnnotation] != inAnHour {
		t.Errorf("labels %v, annotations %v: the button changed more than the hold", got.Labels, got.Annotations)
	}

	// The fence refuses every other change of a namespace.
	for _, tc := range []struct {
		name  string
		patch map[string]any
		want  string
	}{
		{"a label", map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "b"}}}, "not metadata.labels"},
		{"a label removed", map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": nil}}}, "not metadata.labels"},
		{"another annotation", annotated(map[string]any{"example.com/owner": "b"}, nil), "not annotation example.com/owner"},
		{"nsman's expiry date", annotated(map[string]any{policy.ExpiresAnnotation: inAnHour}, nil), "not annotation " + policy.ExpiresAnnotation},
		{"a finalizer", map[string]any{"metadata": map[string]any{"finalizers": []any{"example.com/keep"}}}, "not metadata.finalizers"},
		{"the hold and a label", map[string]any{"metadata": map[string]any{"labels": map[string]any{"x": "y"}, "annotations": map[string]any{status.HoldAnnotation: inAnHour}}}, "not metadata.labels"},
		{"the hold removed", annotated(map[string]any{status.HoldAnnotation: nil}, nil), "to a time (RFC 3339, UTC, to the second), never remove them"},
		{"the wake set to no time", annotated(map[string]any{policy.WakeAnnotation: "forever"}, nil), "to a time (RFC 3339, UTC, to the second)"},
		{"the hold in another zone", annotated(map[string]any{status.HoldAnnotation: "2030-01-01T00:00:00+01:00"}, nil), "to a time (RFC 3339, UTC, to the second)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deniedBy(t, patch(ctx, tc.patch, metav1.PatchOptions{DryRun: dryRun}), fence, tc.want)
		})
	}

	// RBAC: nothing but get and patch of namespaces.
	saDyn := saDynamic(t, kubeconfig)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "serve-test"}}
	others := []struct {
		name string
		do   func() error
		// fenced is what the fence says once RBAC lets it through.
		fenced string
	}{
		{"delete a namespace", func() error { return kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{DryRun: dryRun}) }, "not DELETE namespaces " + ns},
		{"patch a namespace's status", func() error {
			return errOf(kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{DryRun: dryRun}, "status"))
		}, "not UPDATE namespaces/status " + ns},
		{"create a ConfigMap", func() error {
			return errOf(kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{DryRun: dryRun}))
		}, "not CREATE configmaps"},
		{"create a namespace", func() error {
			return errOf(kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns + "-x"}}, metav1.CreateOptions{DryRun: dryRun}))
		}, ""},
		{"list namespaces", func() error { return errOf(kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})) }, ""},
		{"read a Secret", func() error { return errOf(kube.CoreV1().Secrets(ns).Get(ctx, "x", metav1.GetOptions{})) }, ""},
		{"list managers", func() error {
			return errOf(saDyn.Resource(nsmancluster.ManagerResource).Namespace(ns).List(ctx, metav1.ListOptions{}))
		}, ""},
	}
	for _, o := range others {
		if err := o.do(); !apierrors.IsForbidden(err) || strings.Contains(err.Error(), fence) {
			t.Errorf("%s as serve's ServiceAccount: %v, want RBAC to forbid it", o.name, err)
		}
	}

	// Granted more, the fence still refuses it.
	bindClusterRole(ctx, t, "nsman-test-serve-more-"+ns, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: chartNamespace, Name: name},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"delete"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces/status"}, Verbs: []string{"patch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}})
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = others[0].do()
		return apierrors.IsForbidden(last) && strings.Contains(last.Error(), fence), nil
	}); err != nil {
		t.Fatalf("granted delete, serve's ServiceAccount: %v (%v), want the fence to refuse it", last, err)
	}
	for _, o := range others {
		if o.fenced == "" {
			continue
		}
		t.Run("granted, "+o.name, func(t *testing.T) {
			deniedBy(t, o.do(), fence, "nsman serve may only change the hold and wake annotations of a namespace: "+o.fenced)
		})
	}
	if e.NamespaceGoneOrTerminating(t, ns) {
		t.Errorf("namespace %s deleted", ns)
	}
}

// errOf is the error of a call that returns something too.
func errOf[T any](_ T, err error) error { return err }
