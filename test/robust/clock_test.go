package robust

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nsman/nsman/cmd"
	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/report"
	"github.com/nsman/nsman/sweep"
	"github.com/nsman/nsman/webhook"
)

// TestLocalClockAheadFiresNothingEarly runs a sweep whose local clock is an
// hour ahead of the API server's: a manager due in half an hour by the
// server's clock must wait, and the skew is logged.
func TestLocalClockAheadFiresNothingEarly(t *testing.T) {
	e := setup(t)
	ns := shared.Namespace(t)
	m := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.consol.de/v1beta1",
		"kind":       "NamespaceManager",
		"metadata":   map[string]any{"namespace": ns, "name": ns},
		"spec": map[string]any{"policies": []any{map[string]any{
			"name":      "delete in half an hour",
			"condition": map[string]any{"type": "TTL", "params": map[string]any{"ttlSeconds": int64(1800)}},
			"action":    map[string]any{"type": "DELETE"},
		}}},
	}}
	if _, err := e.Dynamic.Resource(cluster.ManagerResource).Namespace(ns).Create(t.Context(), m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	observer := cluster.NewAPIObserver(func() time.Time { return time.Now().Add(time.Hour) })
	clients, err := cmd.NewClients(cfg, observer)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	s, err := sweep.New(sweep.Config{Namespace: ns, SweepID: "clock-test"}, clients, webhook.NewSender(webhook.Options{}), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Entries) != 1 || rep.Entries[0].State != report.StateWaiting {
		t.Fatalf("report %+v: want the manager waiting", rep.Entries)
	}
	if d := time.Since(rep.Summary.Now); d < -2*time.Second || d > 2*time.Second {
		t.Errorf("evaluated at %v, %v from the server's now", rep.Summary.Now, d)
	}
	if !strings.Contains(logs.String(), "local clock differs") {
		t.Errorf("skew not logged:\n%s", logs.String())
	}
	if e.NamespaceGoneOrTerminating(t, ns) {
		t.Fatal("namespace deleted half an hour early")
	}
}
