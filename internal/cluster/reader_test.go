package cluster_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/cluster/clustertest"
	"github.com/nsman/nsman/internal/listpage/listpagetest"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
)

// TestManagerNow: a manager is read again with a list by name (nsman may
// list managers, not get them); none listed is NotFound.
func TestManagerNow(t *testing.T) {
	for _, tt := range []struct {
		name  string
		items []string
		want  string
	}{
		{"listed", []string{listpagetest.StoredManager(3)}, "team-00003"},
		{"gone", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var query string
			server := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				query = r.URL.RawQuery
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(listpagetest.ListPage("", tt.items...)))
			})
			rd := cluster.Reader{Clients: cluster.Clients{Managers: clustertest.ManagersClient(t, server)}}
			obj := &unstructured.Unstructured{}
			obj.SetNamespace("team-00003")
			obj.SetName("team-00003")
			got, err := rd.ManagerNow(t.Context(), obj)
			if !strings.Contains(query, "fieldSelector=metadata.name%3Dteam-00003") {
				t.Errorf("query %q, want a list by name", query)
			}
			switch {
			case tt.want == "" && !apierrors.IsNotFound(err):
				t.Errorf("error %v, want NotFound", err)
			case tt.want != "" && (err != nil || got.Obj.GetName() != tt.want):
				t.Errorf("read %v, %v; want %s", got.Obj, err, tt.want)
			}
		})
	}
}

// TestNamespaceNow: a namespace read again keeps what a sweep reads of it
// (uid, version, labels, deletion, hold, wake, expiry, touch and the
// rules' records), and a namespace gone is not an error.
func TestNamespaceNow(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	ns := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "u-1", ResourceVersion: "7", DeletionTimestamp: &deleted,
			Labels: map[string]string{"ci": "e2e", corev1.LabelMetadataName: "team-a"},
			Annotations: map[string]string{status.HoldAnnotation: "h", status.WakeAnnotation: "w", policy.ExpiresAnnotation: "e", policy.TouchedAnnotation: "t",
				status.PairAnnotationPrefix + "abc": "{}", "other": "x"}},
	}
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	rd := cluster.Reader{Clients: cluster.Clients{Metadata: metadatafake.NewSimpleMetadataClient(scheme, ns)}}
	got, exists, err := rd.NamespaceNow(t.Context(), "team-a")
	if err != nil || !exists {
		t.Fatalf("exists %v, error %v", exists, err)
	}
	if got.Name != "team-a" || got.UID != "u-1" || got.ResourceVersion != "7" || !got.Terminating || !got.Deleting.Equal(deleted.Time) ||
		got.Labels.Get("ci") != "e2e" || got.Labels.Get(corev1.LabelMetadataName) != "team-a" ||
		got.Hold != "h" || got.Wake != "w" || got.Expires != "e" || got.Touched != "t" || len(got.Pairs) != 1 || got.Pairs.Value(status.PairAnnotationPrefix+"abc") != "{}" {
		t.Errorf("read %+v", got)
	}
	if untouched := got.WithoutTouch(); untouched.Touched != "" || untouched.Hold != "h" || got.Touched != "t" {
		t.Errorf("WithoutTouch: %+v (the original: %q)", untouched, got.Touched)
	}
	empty := cluster.Reader{Clients: cluster.Clients{Metadata: metadatafake.NewSimpleMetadataClient(scheme)}}
	if _, exists, err := empty.NamespaceNow(t.Context(), "team-a"); exists || err != nil {
		t.Errorf("a namespace gone: exists %v, error %v", exists, err)
	}
}
