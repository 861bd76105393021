package integration

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The Prometheus's token and CA, as the chart mounts them, and the values
// file of its ci/ that sets them.
const (
	promTokenDir     = "/etc/nsman/prometheus-token"
	promTokenFlag    = "--prometheus-token-file=" + promTokenDir + "/token"
	promCADir        = "/etc/nsman/prometheus-ca"
	promCAFlag       = "--prometheus-ca-file=" + promCADir + "/ca.crt"
	promStackURL     = "http://kube-prometheus-stack-prometheus.monitoring:9090"
	prometheusValues = "prometheus-values.yaml"
)

// wantPrometheusCA checks that item key of ConfigMap configMap is mounted
// read-only at /etc/nsman/prometheus-ca/ca.crt, where --prometheus-ca-file
// reads it, by a volume that is not optional.
func wantPrometheusCA(t *testing.T, r rendered, configMap, key string) {
	t.Helper()
	vols := r.pod().Volumes
	i := slices.IndexFunc(vols, func(v corev1.Volume) bool {
		return v.ConfigMap != nil && v.ConfigMap.Name == configMap && slices.Equal(v.ConfigMap.Items, []corev1.KeyToPath{{Key: key, Path: "ca.crt"}})
	})
	if i < 0 {
		t.Fatalf("volumes %+v: none of ConfigMap %s with %s at ca.crt", vols, configMap, key)
	}
	if ptr.Deref(vols[i].ConfigMap.Optional, false) {
		t.Errorf("ConfigMap %s's volume optional: nsman would ask without its CA", configMap)
	}
	if mounts := r.container(t).VolumeMounts; !slices.Contains(mounts, corev1.VolumeMount{Name: vols[i].Name, MountPath: promCADir, ReadOnly: true}) {
		t.Errorf("mounts %+v: want %s read-only at %s", mounts, vols[i].Name, promCADir)
	}
}

// wantPrometheusToken checks that the token is item key of Secret secret,
// a file mounted as the other Secrets are, and nothing else: no argument
// but the file's, no environment variable, nothing that reads the Secret
// but the volume.
func wantPrometheusToken(t *testing.T, r rendered, secret, key string) {
	t.Helper()
	wantSecretFile(t, r, secret, key, promTokenDir, "token")
	if !slices.Contains(r.args(t), promTokenFlag) {
		t.Errorf("args %q lack %s", r.args(t), promTokenFlag)
	}
	for _, a := range r.args(t) {
		if strings.Contains(a, "token") && a != promTokenFlag {
			t.Errorf("args %q: %s, the token but as its file", r.args(t), a)
		}
	}
	c := r.container(t)
	if len(c.EnvFrom) > 0 || slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.ValueFrom == nil || e.ValueFrom.SecretKeyRef != nil }) {
		t.Errorf("env %+v, envFrom %+v: want the pod's namespace alone", c.Env, c.EnvFrom)
	}
	data, err := json.Marshal(r.cj)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"secretName":"`+secret+`"`); n != 1 || strings.Count(string(data), secret) != 1 {
		t.Errorf("the CronJob names Secret %s %d times as a volume, %d in all: want its volume alone", secret, n, strings.Count(string(data), secret))
	}
}

// wantNoPrometheus checks that nothing of a Prometheus is rendered.
func wantNoPrometheus(t *testing.T, r rendered) {
	t.Helper()
	if slices.ContainsFunc(r.args(t), func(a string) bool {
		return strings.HasPrefix(a, "--prometheus-") || strings.HasPrefix(a, "--traffic-match")
	}) {
		t.Errorf("args %q: a Prometheus without one set", r.args(t))
	}
	if len(r.pod().Volumes) > 0 || len(r.container(t).VolumeMounts) > 0 {
		t.Errorf("volumes %+v, mounts %+v: want none", r.pod().Volumes, r.container(t).VolumeMounts)
	}
}

// egressPolicy is the rendered NetworkPolicy.
func egressPolicy(t *testing.T, r rendered) *networkingv1.NetworkPolicy {
	t.Helper()
	obj := r.find("NetworkPolicy")
	if obj == nil {
		t.Fatal("no NetworkPolicy rendered")
	}
	np := &networkingv1.NetworkPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, np, true); err != nil {
		t.Fatal(err)
	}
	return np
}

// wantEgress checks the NetworkPolicy's rules: DNS's and the API server's,
// then those given (the Pushgateway's, the Prometheus's), no more.
func wantEgress(t *testing.T, r rendered, rules ...networkingv1.NetworkPolicyEgressRule) {
	t.Helper()
	got := egressPolicy(t, r).Spec.Egress
	if len(got) != 2+len(rules) || len(rules) > 0 && !reflect.DeepEqual(got[2:], rules) {
		t.Errorf("egress %+v, want DNS's and the API server's rules, then %+v", got, rules)
	}
}

// egressTo is a rule of TCP ports to peers (none: any address).
func egressTo(ports []int32, to ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyEgressRule {
	rule := networkingv1.NetworkPolicyEgressRule{To: to}
	for _, p := range ports {
		rule.Ports = append(rule.Ports, networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(p))})
	}
	return rule
}

// inNamespace is a peer of the pods of namespace.
func inNamespace(namespace string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": namespace}}}
}

// TestHelmChartPrometheus renders the chart with the values of the
// Prometheus that IDLE conditions with traffic ask, and checks the
// arguments, mounts and egress each renders.
func TestHelmChartPrometheus(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		check func(t *testing.T, r rendered)
	}{
		{"defaults", []string{"--set", "networkPolicy.enabled=true"}, func(t *testing.T, r rendered) {
			wantNoPrometheus(t, r)
			wantEgress(t, r)
		}},
		{"unset, as a release of a chart before them keeps its values (--reuse-values)", []string{"--set", "prometheus=null,trafficMatch=null,networkPolicy.prometheus=null,networkPolicy.enabled=true"}, func(t *testing.T, r rendered) {
			wantArgs(t, r)
			wantNoPrometheus(t, r)
			wantEgress(t, r)
		}},
		{"a URL alone, and the egress to its port", []string{"--set", "prometheus.url=" + promStackURL + ",networkPolicy.enabled=true"}, func(t *testing.T, r rendered) {
			wantArgs(t, r, "--prometheus-url="+promStackURL)
			if len(r.pod().Volumes) > 0 {
				t.Errorf("volumes %+v, want none", r.pod().Volumes)
			}
			wantEgress(t, r, egressTo([]int32{9090}))
		}},
		{"an https URL without a port: 443", []string{"--set", "prometheus.url=https://prometheus.example.com/api/prom,networkPolicy.enabled=true"}, func(t *testing.T, r rendered) {
			wantEgress(t, r, egressTo([]int32{443}))
		}},
		{"an http URL without a port: 80", []string{"--set", "prometheus.url=http://thanos-query.monitoring,networkPolicy.enabled=true"}, func(t *testing.T, r rendered) {
			wantEgress(t, r, egressTo([]int32{80}))
		}},
		{"the egress's ports and peers given", []string{"--set", "prometheus.url=" + promStackURL + ",networkPolicy.enabled=true", "--set-json", `networkPolicy.prometheus={"ports":[9090,10902],"to":[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]}`}, func(t *testing.T, r rendered) {
			wantEgress(t, r, egressTo([]int32{9090, 10902}, inNamespace("monitoring")))
		}},
		{"the Pushgateway's egress, to its port, before the Prometheus's", []string{"--set", "pushgateway.url=http://pushgateway.monitoring:9091,prometheus.url=" + promStackURL + ",networkPolicy.enabled=true"}, func(t *testing.T, r rendered) {
			wantEgress(t, r, egressTo([]int32{9091}), egressTo([]int32{9090}))
		}},
		{"the Pushgateway's egress given, without a Prometheus", []string{"--set", "pushgateway.url=https://pushgateway.example.com,networkPolicy.enabled=true", "--set-json", `networkPolicy.pushgateway={"ports":[9091],"to":[{"ipBlock":{"cidr":"192.0.2.0/24"}}]}`}, func(t *testing.T, r rendered) {
			wantEgress(t, r, egressTo([]int32{9091}, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "192.0.2.0/24"}}))
		}},
		{"token and CA from existing objects, headers and presets sorted", []string{
			"--set", "prometheus.url=https://mimir.example.com/prometheus,prometheus.token.existingSecret=prom-token,prometheus.ca.existingConfigMap=prom-ca",
			"--set-json", `prometheus.headers={"X-Scope-OrgID":"team-a|team-b","Accept-Language":"en"}`,
			"--set-json", `trafficMatch={"traefik":"namespace=\"edge\"","istio":"cluster=\"eu\"","ingress-nginx":"job=\"ingress-nginx-controller-metrics\""}`,
		}, func(t *testing.T, r rendered) {
			wantPrometheusToken(t, r, "prom-token", "token")
			wantPrometheusCA(t, r, "prom-ca", "ca.crt")
			wantArgs(t, r, "--prometheus-url=https://mimir.example.com/prometheus", promTokenFlag, promCAFlag,
				"--prometheus-header=Accept-Language=en", "--prometheus-header=X-Scope-OrgID=team-a|team-b",
				`--traffic-match=ingress-nginx=job="ingress-nginx-controller-metrics"`, `--traffic-match=istio=cluster="eu"`, `--traffic-match=traefik=namespace="edge"`)
		}},
		{"the token's and the CA's keys, beside a notification URL", []string{"--set", "prometheus.url=" + promStackURL + ",prometheus.token.existingSecret=tsdb-bearer,prometheus.token.existingSecretKey=bearer,prometheus.ca.existingConfigMap=certs,prometheus.ca.existingConfigMapKey=service-ca.crt,notify.existingSecret=chat"}, func(t *testing.T, r rendered) {
			wantPrometheusToken(t, r, "tsdb-bearer", "bearer")
			wantPrometheusCA(t, r, "certs", "service-ca.crt")
			wantSecretFile(t, r, "chat", "url", notifyURLDir, "url")
			wantArgs(t, r, "--prometheus-url="+promStackURL, promTokenFlag, promCAFlag, notifyURLFlag, "--notify-format=json")
		}},
		{"timeout and series cap", []string{"--set", "prometheus.url=" + promStackURL + ",prometheus.timeout=1m30s,prometheus.maxSeries=500"}, func(t *testing.T, r rendered) {
			wantArgs(t, r, "--prometheus-url="+promStackURL, "--prometheus-timeout=1m30s", "--prometheus-max-series=500")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, render(t, tc.flags...)) })
	}
}

// TestHelmChartSchemaRefusesWrongPrometheusValues: the schema and the
// templates refuse a Prometheus's values that nsman would not take, or
// that would put the token anywhere but in a file.
func TestHelmChartSchemaRefusesWrongPrometheusValues(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		set  string
		want string
	}{
		{"prometheus.url=prometheus.monitoring:9090", "/prometheus/url"},
		{"prometheus.url=ftp://prometheus", "/prometheus/url"},
		{"prometheus.token.value=s3cret", "additional properties 'value' not allowed"},
		{"prometheus.tokenFile=/token", "additional properties 'tokenFile' not allowed"},
		{"prometheus.token.existingSecretKey=", "/prometheus/token/existingSecretKey"},
		{"prometheus.ca.existingConfigMapKey=", "/prometheus/ca/existingConfigMapKey"},
		{"prometheus.headers.X@Scope=team", "invalid propertyName 'X@Scope'"},
		{"prometheus.headers.X-Scope-OrgID=1", "/prometheus/headers/X-Scope-OrgID"},
		{"prometheus.timeout=30", "/prometheus/timeout"},
		{"prometheus.maxSeries=-1", "/prometheus/maxSeries"},
		{"trafficMatch.nginx=job=\"x\"", "additional properties 'nginx' not allowed"},
		{"trafficMatch.istio=", "/trafficMatch/istio"},
		{"networkPolicy.prometheus.ports={0}", "/networkPolicy/prometheus/ports/0"},
		{"networkPolicy.prometheus.port=9090", "additional properties 'port' not allowed"},
		{"networkPolicy.pushgateway.ports={65536}", "/networkPolicy/pushgateway/ports/0"},
		{"prometheus.token.existingSecret=prom-token", "set prometheus.url too"},
		{"prometheus.ca.existingConfigMap=prom-ca", "set prometheus.url too"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			_, err := runHelm(ctx, t, "template", chartRelease, chartDir, "--set", tc.set)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("helm template --set %s: %v, want an error about %q", tc.set, err, tc.want)
			}
		})
	}
}

// checkPrometheusValues checks what ci/prometheus-values.yaml renders.
func checkPrometheusValues(t *testing.T, r rendered) {
	wantPrometheusToken(t, r, "nsman-prometheus-token", "token")
	wantPrometheusCA(t, r, "nsman-prometheus-ca", "service-ca.crt")
	wantArgs(t, r, "--prometheus-url=https://mimir-gateway.mimir.svc:8443/prometheus", promTokenFlag, promCAFlag,
		"--prometheus-header=X-Scope-OrgID=platform", "--prometheus-timeout=45s", "--prometheus-max-series=50000",
		`--traffic-match=ingress-nginx=job="ingress-nginx-controller-metrics"`, `--traffic-match=traefik=namespace="traefik-system"`)
	wantEgress(t, r, egressTo([]int32{8080}, inNamespace("mimir")))
	if obj := r.find("Secret"); obj != nil {
		t.Errorf("Secret %s rendered: the token's is the user's", obj.GetName())
	}
}

// prometheusFiles writes what the token and CA files hold in the pod: a
// token, and the PEM certificate of a TLS server.
func prometheusFiles(t *testing.T) (token, ca string) {
	t.Helper()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	dir := t.TempDir()
	token, ca = filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(token, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return token, ca
}
