package cluster

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
)

// TestNamespaceKeepsAnnotationsSorted: the rules' records and the owner
// markers a sweep keeps of a namespace are each in key order, whatever
// order the map listed them in, and each is found by its key.
func TestNamespaceKeepsAnnotationsSorted(t *testing.T) {
	annotations := map[string]string{policy.OwnerAnnotation: "applications.argoproj.io/argocd/pr-1", "argocd.argoproj.io/tracking-id": "pr-1:/Namespace:pr-1/pr-1", "example.com/other": "x"}
	var keys []string
	for i := range 20 {
		key := fmt.Sprintf("%s%02d", status.PairAnnotationPrefix, (i*7)%20)
		annotations[key] = fmt.Sprint(i)
		keys = append(keys, key)
	}
	ns := NamespaceOf(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "pr-1", Annotations: annotations}})
	byKey := func(a, b Annotation) int { return cmp.Compare(a.Key, b.Key) }
	if !slices.IsSortedFunc(ns.Pairs, byKey) || !slices.IsSortedFunc(ns.OwnerMarkers, byKey) || len(ns.Pairs) != 20 || len(ns.OwnerMarkers) != 2 {
		t.Fatalf("records %v, markers %v: want 20 and 2, each sorted by key", ns.Pairs, ns.OwnerMarkers)
	}
	for _, key := range keys {
		if v, ok := ns.Pairs.Get(key); !ok || v != annotations[key] {
			t.Errorf("record %s: %q, %t; want %q", key, v, ok, annotations[key])
		}
	}
	if v, ok := ns.Pairs.Get(status.PairAnnotationPrefix + "99"); ok || v != "" || ns.OwnerMarkers.Value("example.com/other") != "" {
		t.Errorf("a record or a marker not there found: %q", v)
	}
	if m := ns.Marks("argocd").Annotations; len(m) != 2 || m[policy.OwnerAnnotation] != annotations[policy.OwnerAnnotation] {
		t.Errorf("marks' annotations %v, want the two markers", m)
	}
}

// BenchmarkNamespaceOfKept reads 10,000 namespaces that each carry a
// rule's record and Argo CD's tracking id, as an OWNER_GONE rule leaves
// them, and reports what the sweep keeps of each, their listing aside.
func BenchmarkNamespaceOfKept(b *testing.B) {
	const n = 10_000
	items := make([]*metav1.PartialObjectMetadata, n)
	for i := range items {
		name := fmt.Sprintf("pr-%05d", i)
		items[i] = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(fmt.Sprintf("%036d", i)), ResourceVersion: "123456",
			CreationTimestamp: metav1.NewTime(time.Now()), Labels: map[string]string{"nsman.bench/owners": "on", "kubernetes.io/metadata.name": name},
			Annotations: map[string]string{"argocd.argoproj.io/tracking-id": name + ":/Namespace:" + name + "/" + name,
				status.PairAnnotation("0123456789abcdef"): `{"rule":"bench-owners/previews","observedGeneration":1,"checks":{"owner gone":{"owner":"applications.argoproj.io/argocd/` + name + `"}}}`}}}
	}
	var kept uint64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		out := make([]Namespace, n)
		for i, m := range items {
			out[i] = NamespaceOf(m)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		kept = (after.HeapAlloc - before.HeapAlloc) / n
		runtime.KeepAlive(out)
	}
	b.ReportMetric(float64(kept), "kept-B/namespace")
}
