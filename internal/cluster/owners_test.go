package cluster

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/listpage/listpagetest"
	"github.com/nsman/nsman/internal/owner"
)

// An owner kind is listed cluster-wide at its path: as metadata (read from
// protobuf, uid and deletion kept) unless its spec is read, then as JSON
// into owner.Item's fields.
func TestEachOwnerReadsWhatIsAskedFor(t *testing.T) {
	deleting := metav1.Now()
	asProtobuf, err := listpagetest.ProtobufMetadata(&metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "k", UID: "u-k", DeletionTimestamp: &deleting, Annotations: map[string]string{"x": strings.Repeat("x", 1<<10)}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	asJSON := `{"kind":"ApplicationList","apiVersion":"argoproj.io/v1alpha1","metadata":{},"items":[{"metadata":{"namespace":"argocd","name":"a","uid":"u-a"},` +
		`"spec":{"project":"default","destination":{"server":"https://kubernetes.default.svc","namespace":"pr-1"},"syncPolicy":{"syncOptions":["CreateNamespace=true"]}}}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		metadataOnly := strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadataList")
		switch {
		case r.URL.Path == "/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations" && metadataOnly:
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			_, _ = w.Write(asProtobuf)
		case r.URL.Path == "/apis/argoproj.io/v1alpha1/applications" && !metadataOnly:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(asJSON))
		default:
			http.Error(w, r.URL.Path+" "+r.Header.Get("Accept"), http.StatusNotFound)
		}
	}))
	defer srv.Close()
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rd := Reader{Clients: Clients{Kube: kube}, PageSize: 500}
	var got []owner.Item
	// The Application, whose spec is read, and the Kustomization.
	for _, k := range owner.Kinds()[:2] {
		if err := rd.EachOwner(t.Context(), k.Resource, k.ReadsSpec(), func(it *owner.Item) error {
			got = append(got, *it)
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d owners read, want 2", len(got))
	}
	app, k := got[0], got[1]
	if app.Metadata.Name != "a" || app.Metadata.UID != "u-a" || owner.Kinds()[0].Creates(&app) != "pr-1" {
		t.Errorf("application read as %+v", app)
	}
	if k.Metadata.Name != "k" || k.Metadata.Namespace != "flux-system" || k.Metadata.UID != "u-k" || k.Metadata.DeletionTimestamp == nil {
		t.Errorf("kustomization read as %+v", k)
	}
}
