package write

import (
	"io"
	"net/http"
	"testing"

	"github.com/nsman/nsman/internal/cluster/clustertest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// A manager patch goes to the manager or its status as a JSON merge patch,
// and the API server's refusal comes back as the error it describes: a
// claim relies on telling a conflict apart.
func TestPatchManager(t *testing.T) {
	type got struct{ method, path, contentType, body string }
	var requests []got
	server := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		requests = append(requests, got{r.Method, r.URL.Path, r.Header.Get("Content-Type"), string(body)})
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/apis/k8s.consol.de/v1beta1/namespaces/team-a/namespacemanagers/m/status" {
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409,` +
				`"message":"Operation cannot be fulfilled on namespacemanagers.k8s.consol.de \"m\": the object has been modified"}`))
			return
		}
		_, _ = w.Write([]byte(`{"apiVersion":"k8s.consol.de/v1beta1","kind":"NamespaceManager","metadata":{"name":"m","namespace":"team-a"}}`))
	})
	w := New(nil, nil, clustertest.ManagersClient(t, server), nil, false)

	if err := w.PatchManager(t.Context(), "team-a", "m", Patch{Body: []byte(`{"spec":{"deactivated":true}}`)}); err != nil {
		t.Fatal(err)
	}
	err := w.PatchManager(t.Context(), "team-a", "m", Patch{Subresource: "status", Body: []byte(`{"status":{"state":"fired"}}`)})
	if !apierrors.IsConflict(err) {
		t.Errorf("status patch: error %v, want a conflict", err)
	}
	want := []got{
		{"PATCH", "/apis/k8s.consol.de/v1beta1/namespaces/team-a/namespacemanagers/m", "application/merge-patch+json", `{"spec":{"deactivated":true}}`},
		{"PATCH", "/apis/k8s.consol.de/v1beta1/namespaces/team-a/namespacemanagers/m/status", "application/merge-patch+json", `{"status":{"state":"fired"}}`},
	}
	if len(requests) != len(want) {
		t.Fatalf("requests %+v, want %+v", requests, want)
	}
	for i := range want {
		if requests[i] != want[i] {
			t.Errorf("request %d: %+v, want %+v", i, requests[i], want[i])
		}
	}
}
