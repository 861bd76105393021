package integration

import (
	"bytes"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
)

func runWake(t *testing.T, kubeconfig string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := cmd.Execute(t.Context(), append([]string{"wake", "--kubeconfig", kubeconfig}, args...), &out, &out)
	return code, out.String()
}

// TestWakeWritesTheAnnotation: a user allowed to patch one namespace, or
// one manager, and nothing else wakes it with nsman wake: a dry run and a
// wake beyond --max-hold write nothing; --for writes the wake annotation,
// an RFC 3339 time that long ahead, on that object alone (no hold, nothing
// on the other); --release removes it. The user cannot wake what it was
// not granted.
func TestWakeWritesTheAnnotation(t *testing.T) {
	setup(t)
	tests := []struct {
		name string
		// grant is what the user may patch in namespace ns.
		grant func(ns string) rbacv1.PolicyRule
		// args name the target in ns; refused is a target it may not patch.
		args, refused func(ns string) []string
		// annotations of the target, and of the object it must leave alone.
		target, other func(t *testing.T, ns string) map[string]string
	}{
		{
			name: "namespace",
			grant: func(ns string) rbacv1.PolicyRule {
				return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{ns}, Verbs: []string{"patch"}}
			},
			args:    func(ns string) []string { return []string{ns} },
			refused: func(ns string) []string { return []string{ns, "--manager", ns} },
			target:  namespaceAnnotations,
			other:   managerAnnotations,
		},
		{
			name: "manager",
			grant: func(ns string) rbacv1.PolicyRule {
				return rbacv1.PolicyRule{APIGroups: []string{"k8s.consol.de"}, Resources: []string{"namespacemanagers"}, ResourceNames: []string{ns}, Verbs: []string{"patch"}}
			},
			args:    func(ns string) []string { return []string{ns, "--manager", ns} },
			refused: func(ns string) []string { return []string{ns} },
			target:  managerAnnotations,
			other:   namespaceAnnotations,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := shared.Namespace(t)
			createManager(t, managerObj(ns, ns, ns, []any{ttlPolicy("in an hour", 3600, deleteAction)}))
			kubeconfig := holder(t, ns, tt.grant(ns))
			wake := func(args ...string) (int, string) { return runWake(t, kubeconfig, append(tt.args(ns), args...)...) }

			if code, out := runWake(t, kubeconfig, append(tt.refused(ns), "--for", "1h")...); code != 1 || !strings.Contains(out, "forbidden") {
				t.Errorf("waking what was not granted: exit %d, %q; want 1, forbidden", code, out)
			}
			if code, out := wake("--for", "2h", "--dry-run"); code != 0 || !strings.Contains(out, "would be woken until") || !strings.Contains(out, status.WakeAnnotation) {
				t.Errorf("dry run: exit %d, %q; want 0 and the patch", code, out)
			}
			if code, out := wake("--for", "721h"); code != 2 || !strings.Contains(out, "more than --max-hold") {
				t.Errorf("beyond --max-hold: exit %d, %q; want 2, refused", code, out)
			}
			if got := tt.target(t, ns)[status.WakeAnnotation]; got != "" {
				t.Fatalf("a dry run or a refused wake wrote %q", got)
			}

			before := time.Now().Truncate(time.Second)
			if code, out := wake("--for", "2h"); code != 0 || !strings.Contains(out, "woken until") {
				t.Fatalf("wake: exit %d, %q", code, out)
			}
			after := time.Now()
			annotations := tt.target(t, ns)
			until, err := time.Parse(time.RFC3339, annotations[status.WakeAnnotation])
			if err != nil || until.Location() != time.UTC || until.Before(before.Add(2*time.Hour)) || until.After(after.Add(2*time.Hour)) {
				t.Errorf("wake annotation %q (%v), want an RFC 3339 UTC time 2h after %s", annotations[status.WakeAnnotation], err, before.UTC().Format(time.RFC3339))
			}
			if hold, ok := annotations[status.HoldAnnotation]; ok {
				t.Errorf("a wake wrote a hold %q", hold)
			}
			if got, ok := tt.other(t, ns)[status.WakeAnnotation]; ok {
				t.Errorf("a wake of the %s wrote %q on the other object", tt.name, got)
			}

			if code, out := wake("--release"); code != 0 || !strings.Contains(out, "released from its wake") {
				t.Fatalf("release: exit %d, %q", code, out)
			}
			if got, ok := tt.target(t, ns)[status.WakeAnnotation]; ok {
				t.Errorf("released, the wake annotation is still %q", got)
			}
		})
	}
}

func namespaceAnnotations(t *testing.T, ns string) map[string]string {
	t.Helper()
	got, err := shared.Admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Annotations
}

// managerAnnotations are those of the manager named as its namespace.
func managerAnnotations(t *testing.T, ns string) map[string]string {
	t.Helper()
	got, err := env.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.GetAnnotations()
}
