package clustertest

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// CoreListsOverHTTP is client, but for its lists of pods,
// PersistentVolumeClaims, Services and namespaces, which nsman reads through the REST
// client as they arrive (see cluster.EachStreamed): those are served over HTTP
// from client, which records them as its own.
func CoreListsOverHTTP(t *testing.T, client *kubefake.Clientset) kubernetes.Interface {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		namespace, resource := "", strings.TrimPrefix(r.URL.Path, "/api/v1/")
		if rest, ok := strings.CutPrefix(resource, "namespaces/"); ok {
			namespace, resource, _ = strings.Cut(rest, "/")
		}
		opts := metav1.ListOptions{LabelSelector: r.URL.Query().Get("labelSelector"), FieldSelector: r.URL.Query().Get("fieldSelector")}
		var list runtime.Object
		var err error
		switch resource {
		case "pods":
			list, err = client.CoreV1().Pods(namespace).List(r.Context(), opts)
		case "persistentvolumeclaims":
			list, err = client.CoreV1().PersistentVolumeClaims(namespace).List(r.Context(), opts)
		case "services":
			list, err = client.CoreV1().Services(namespace).List(r.Context(), opts)
		case "namespaces":
			list, err = client.CoreV1().Namespaces().List(r.Context(), opts)
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			status := apierrors.NewInternalError(err).Status()
			var known apierrors.APIStatus
			if errors.As(err, &known) {
				status = known.Status()
			}
			w.WriteHeader(int(status.Code))
			_ = json.NewEncoder(w).Encode(status)
			return
		}
		_ = json.NewEncoder(w).Encode(list)
	}))
	t.Cleanup(srv.Close)
	rc, err := rest.RESTClientFor(&rest.Config{Host: srv.URL, APIPath: "/api",
		ContentConfig: rest.ContentConfig{GroupVersion: &corev1.SchemeGroupVersion, NegotiatedSerializer: scheme.Codecs.WithoutConversion()}})
	if err != nil {
		t.Fatal(err)
	}
	return restCore{Clientset: client, core: coreOverREST{CoreV1Interface: client.CoreV1(), rest: rc}}
}

type restCore struct {
	*kubefake.Clientset
	core typedcorev1.CoreV1Interface
}

func (c restCore) CoreV1() typedcorev1.CoreV1Interface { return c.core }

type coreOverREST struct {
	typedcorev1.CoreV1Interface
	rest rest.Interface
}

func (c coreOverREST) RESTClient() rest.Interface { return c.rest }
