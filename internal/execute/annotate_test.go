package execute

import (
	"io"
	"maps"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
)

// TestHoldWakeAndTouchAnnotateTheNamespace: a hold or a wake is written as
// RFC 3339 UTC under its own key and removed with a null; a touch is the
// time to the second, UTC; a dry run returns the same patch and sends
// nothing.
func TestHoldWakeAndTouchAnnotateTheNamespace(t *testing.T) {
	at := time.Date(2026, 11, 28, 3, 4, 5, 600_000_000, time.FixedZone("CET", 3600))
	tests := []struct {
		name    string
		write   func(clients cluster.Clients, dryRun bool) ([]byte, error)
		key     string
		want    string // "" : the annotation is removed
		body    string
		already map[string]string
	}{
		{"hold", func(c cluster.Clients, dry bool) ([]byte, error) { return Hold(t.Context(), c, "team-a", "", at, dry) },
			status.HoldAnnotation, "2026-11-28T02:04:05Z", `{"metadata":{"annotations":{"nsman.k8s.consol.de/hold-until":"2026-11-28T02:04:05Z"}}}`, nil},
		{"release", func(c cluster.Clients, dry bool) ([]byte, error) {
			return Hold(t.Context(), c, "team-a", "", time.Time{}, dry)
		}, status.HoldAnnotation, "", `{"metadata":{"annotations":{"nsman.k8s.consol.de/hold-until":null}}}`, map[string]string{status.HoldAnnotation: "2026-11-30T00:00:00Z"}},
		{"wake", func(c cluster.Clients, dry bool) ([]byte, error) {
			return WakeUntil(t.Context(), c, "team-a", "", at, dry)
		},
			status.WakeAnnotation, "2026-11-28T02:04:05Z", `{"metadata":{"annotations":{"nsman.k8s.consol.de/wake-until":"2026-11-28T02:04:05Z"}}}`, nil},
		{"wake released", func(c cluster.Clients, dry bool) ([]byte, error) {
			return WakeUntil(t.Context(), c, "team-a", "", time.Time{}, dry)
		}, status.WakeAnnotation, "", `{"metadata":{"annotations":{"nsman.k8s.consol.de/wake-until":null}}}`,
			map[string]string{status.WakeAnnotation: "2026-11-30T00:00:00Z", status.HoldAnnotation: "2026-11-30T00:00:00Z"}},
		{"touch", func(c cluster.Clients, dry bool) ([]byte, error) { return Touch(t.Context(), c, "team-a", at, dry) },
			policy.TouchedAnnotation, "2026-11-28T02:04:05Z", `{"metadata":{"annotations":{"nsman.k8s.consol.de/touched":"2026-11-28T02:04:05Z"}}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, dryRun := range []bool{false, true} {
				kube := kubefake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Annotations: tt.already}})
				body, err := tt.write(cluster.Clients{Kube: kube}, dryRun)
				if err != nil {
					t.Fatal(err)
				}
				if string(body) != tt.body {
					t.Errorf("dry run %v: patch %s, want %s", dryRun, body, tt.body)
				}
				ns, err := kube.CoreV1().Namespaces().Get(t.Context(), "team-a", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got, set := ns.Annotations[tt.key]
				switch {
				case dryRun && !maps.Equal(ns.Annotations, tt.already):
					t.Errorf("dry run changed the namespace: %v", ns.Annotations)
				case !dryRun && tt.want == "" && set:
					t.Errorf("%s still %q, want it removed", tt.key, got)
				case !dryRun && tt.want != "" && got != tt.want:
					t.Errorf("%s = %q, want %q", tt.key, got, tt.want)
				}
				others, before := maps.Clone(ns.Annotations), maps.Clone(tt.already)
				delete(others, tt.key)
				delete(before, tt.key)
				if !maps.Equal(others, before) {
					t.Errorf("dry run %v: other annotations %v, want %v as they were", dryRun, others, before)
				}
			}
		})
	}
}

// TestHoldAndWakeAManager: a hold or a wake on one manager patches that
// manager, not its namespace.
func TestHoldAndWakeAManager(t *testing.T) {
	until := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name  string
		write func(cluster.Clients) ([]byte, error)
		body  string
	}{
		{"hold", func(c cluster.Clients) ([]byte, error) {
			return Hold(t.Context(), c, "team-a", "preview", until, false)
		},
			`{"metadata":{"annotations":{"nsman.k8s.consol.de/hold-until":"2026-12-01T00:00:00Z"}}}`},
		{"wake", func(c cluster.Clients) ([]byte, error) {
			return WakeUntil(t.Context(), c, "team-a", "preview", until, false)
		},
			`{"metadata":{"annotations":{"nsman.k8s.consol.de/wake-until":"2026-12-01T00:00:00Z"}}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var method, path, body string
			managers := clustertest.ManagersClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				data, _ := io.ReadAll(r.Body)
				method, path, body = r.Method, r.URL.Path, string(data)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{"name":"preview","namespace":"team-a"}}`))
			}))
			kube := kubefake.NewClientset()
			if _, err := tt.write(cluster.Clients{Kube: kube, Managers: managers}); err != nil {
				t.Fatal(err)
			}
			if method != http.MethodPatch || path != "/apis/k8s.consol.de/v1beta1/namespaces/team-a/namespacemanagers/preview" || body != tt.body {
				t.Errorf("%s %s %s, want %s patched onto the manager", method, path, body, tt.body)
			}
			if n := len(kube.Actions()); n != 0 {
				t.Errorf("%d requests for namespaces, want none", n)
			}
		})
	}
}
