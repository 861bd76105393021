package probe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/listpage"
)

// The sweep's cluster-wide activity index is given up after --claim-ttl,
// as the reclaim index is, and the namespace read then, after its own
// timeout: an IDLE policy waits that long at most.
func TestActivityIndexIsBounded(t *testing.T) {
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer stalled.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: stalled.URL})
	if err != nil {
		t.Fatal(err)
	}
	x := NewActivity(testReads(cluster.Clients{Kube: client}, 2*time.Second, nil))
	x.indexed.Store(true)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	began := time.Now()
	_, indexed, err := x.Last(ctx, "team")
	bound := x.reads.ClaimTTL + x.reads.NamespaceTimeout() + time.Second
	if took := time.Since(began); err == nil || indexed || took > bound {
		t.Errorf("an index that never answers: %v (indexed %v) after %v; want an error within %v", err, indexed, took, bound)
	}
}

// emptyLists serves every list empty, as metadata, and counts the lists
// in a namespace and cluster-wide.
type emptyLists struct {
	inNamespace, clusterWide atomic.Int64
}

func (l *emptyLists) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.URL.Path, "/namespaces/") {
		l.inNamespace.Add(1)
	} else {
		l.clusterWide.Add(1)
	}
	if !strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadataList") {
		http.Error(w, "lists of activity are read as metadata", http.StatusNotAcceptable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[]}`))
}

// ActivityIndexAfter counts namespaces, not the subjects that ask: many
// IDLE managers of one namespace read its four lists once, and never the
// cluster-wide ones.
func TestActivityIndexCountsNamespaces(t *testing.T) {
	served := &emptyLists{}
	srv := httptest.NewServer(served)
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	x := NewActivity(testReads(cluster.Clients{Kube: client}, defaultClaimTTL, nil))
	for range ActivityIndexAfter + 8 {
		if _, indexed, err := x.Last(t.Context(), "team"); err != nil || indexed {
			t.Fatalf("%v (indexed %v)", err, indexed)
		}
	}
	if in, all := served.inNamespace.Load(), served.clusterWide.Load(); in != int64(len(activityResources)) || all != 0 {
		t.Errorf("%d asks about one namespace: %d lists in it and %d cluster-wide, want %d and 0", ActivityIndexAfter+8, in, all, len(activityResources))
	}
	for i := range ActivityIndexAfter {
		if _, _, err := x.Last(t.Context(), fmt.Sprintf("other-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, indexed, err := x.Last(t.Context(), "team"); err != nil || !indexed {
		t.Errorf("past %d namespaces: %v (indexed %v), want the index's answer", ActivityIndexAfter, err, indexed)
	}
}

// A sweep that knows it will answer every namespace from its index lists
// it at once, on the goroutine it starts (IndexAll), beside its other
// reads: the first namespace asked then finds it listed, and it is listed
// once.
func TestActivityIndexAllListsAhead(t *testing.T) {
	served := &emptyLists{}
	srv := httptest.NewServer(served)
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	x := NewActivity(testReads(cluster.Clients{Kube: client}, defaultClaimTTL, nil))
	var wg sync.WaitGroup
	x.IndexAll(t.Context(), wg.Go)
	wg.Wait()
	if in, all := served.inNamespace.Load(), served.clusterWide.Load(); in != 0 || all != int64(len(activityResources)) {
		t.Fatalf("IndexAll: %d lists in a namespace and %d cluster-wide before any namespace was asked about, want 0 and %d", in, all, len(activityResources))
	}
	for _, ns := range []string{"team", "other"} {
		if _, indexed, err := x.Last(t.Context(), ns); err != nil || !indexed {
			t.Errorf("%s: %v (indexed %v), want the index's answer", ns, err, indexed)
		}
	}
	if in, all := served.inNamespace.Load(), served.clusterWide.Load(); in != 0 || all != int64(len(activityResources)) {
		t.Errorf("after two namespaces asked: %d lists in a namespace and %d cluster-wide, want 0 and %d: they read the index listed ahead", in, all, len(activityResources))
	}
	// A namespace answered from the index costs a lookup: it is not
	// counted among those asked, which decides only whether to list it.
	names := make([]string, 101) // AllocsPerRun's runs and its warm-up
	for i := range names {
		names[i] = fmt.Sprintf("quiet-%d", i)
	}
	next := 0
	if allocs := testing.AllocsPerRun(100, func() {
		if _, indexed, err := x.Last(t.Context(), names[next]); err != nil || !indexed {
			t.Fatalf("%s: %v (indexed %v)", names[next], err, indexed)
		}
		next++
	}); allocs != 0 {
		t.Errorf("a namespace answered from the index allocates %v times, want none", allocs)
	}
}

// The managers counted ahead are counted by the namespace they target.
func TestCountAheadCountsNamespaces(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	status := []byte(`{"lastActivity":{"at":"2025-12-31T00:00:00Z","what":"ReplicaSet web created"}}`)
	page := func(namespace string, spec func(i int) any) *listpage.ManagerPage {
		p := &listpage.ManagerPage{}
		for i := range ActivityIndexAfter + 1 {
			it := listpage.ListedItem{Spec: spec(i), Status: status}
			it.Metadata.Namespace, it.Metadata.Name, it.Metadata.UID = namespace, fmt.Sprintf("m-%d", i), types.UID(fmt.Sprint(i))
			p.Items = append(p.Items, it)
		}
		return p
	}
	x, all := &Activity{}, func(types.UID) bool { return true }
	x.ExpectAhead(page("team", func(int) any { return map[string]any{"namespace": "team"} }), now, all, []string{"platform"})
	if x.indexed.Load() {
		t.Errorf("%d managers of one namespace set the index ahead", ActivityIndexAfter+1)
	}
	// A tenant's managers that name other namespaces read none of them.
	x.ExpectAhead(page("team", func(i int) any { return map[string]any{"namespace": fmt.Sprintf("other-%d", i)} }), now, all, []string{"platform"})
	if x.indexed.Load() {
		t.Errorf("%d managers of a tenant targeting other namespaces set the index ahead", ActivityIndexAfter+1)
	}
	x.ExpectAhead(page("platform", func(i int) any { return map[string]any{"namespace": fmt.Sprintf("other-%d", i)} }), now, all, []string{"platform"})
	if !x.indexed.Load() {
		t.Errorf("%d managers of a trusted namespace, each targeting its own, did not set the index ahead", ActivityIndexAfter+1)
	}
}

// A namespace's activity that never comes is given up after
// Reads.NamespaceTimeout, with an error: its IDLE policy does not hold.
func TestActivityReadIsBounded(t *testing.T) {
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer stalled.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: stalled.URL})
	if err != nil {
		t.Fatal(err)
	}
	reads := testReads(cluster.Clients{Kube: client}, minClaimTTL, nil)
	began := time.Now()
	_, indexed, err := NewActivity(reads).Last(t.Context(), "team")
	if took := time.Since(began); err == nil || indexed || took > reads.NamespaceTimeout()+time.Second {
		t.Errorf("a read that never answers: %v after %v; want an error after %v", err, took, reads.NamespaceTimeout())
	}
}
