package record

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/internal/write"
	"k8s.io/apimachinery/pkg/types"
)

// patchRecorder is a writer that keeps the namespace patches it is given.
type patchRecorder struct {
	write.Writer
	mu      sync.Mutex
	patches map[string][]write.Patch
}

func (w *patchRecorder) PatchNamespace(_ context.Context, name string, patch write.Patch) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.patches[name] = append(w.patches[name], patch)
	return nil
}

// staleAt removes stale records at now through w, every namespace of its
// shard, four at a time.
func staleAt(now time.Time, w write.Writer) Stale {
	bounded := func(n int, fn func(i int)) {
		var wg sync.WaitGroup
		slots := make(chan struct{}, 4)
		for i := range n {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				fn(i)
			})
		}
		wg.Wait()
	}
	return Stale{Writer: w, Log: slog.New(slog.DiscardHandler), Now: now, Ours: func(types.UID) bool { return true }, Bounded: bounded, Stop: context.Background()}
}

// TestStaleRecordsOnePatchEach: the records of rules that are gone on a
// namespace go with one JSON patch, which tests each before removing it;
// those of standing managers, recent ones and ones without a time stay.
func TestStaleRecordsOnePatchEach(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	old := fmt.Sprintf(`{"written":%q}`, now.Add(-2*StaleRecordAge).Format(time.RFC3339))
	pairs := map[string]string{
		status.PairAnnotationPrefix + "standing": old,
		status.PairAnnotationPrefix + "recent":   fmt.Sprintf(`{"written":%q}`, now.Add(-time.Minute).Format(time.RFC3339)),
		status.PairAnnotationPrefix + "no-time":  `{}`,
	}
	for i := range 300 {
		pairs[status.PairAnnotationPrefix+fmt.Sprintf("gone-%03d", i)] = old
	}
	w := &patchRecorder{Writer: dryRun, patches: map[string][]write.Patch{}}
	done := staleAt(now, w).Remove(t.Context(), map[string]cluster.Namespace{"tenant": {Name: "tenant", UID: "u1", Pairs: cluster.AnnotationsOf(pairs)}}, map[types.UID]bool{"standing": true})
	if done.Removed != 300 || done.Left != 0 || len(w.patches["tenant"]) != 1 {
		t.Fatalf("removed %d, left %d, with %d patches; want 300, 0, one patch", done.Removed, done.Left, len(w.patches["tenant"]))
	}
	var ops []write.PatchOp
	if err := json.Unmarshal(w.patches["tenant"][0].Body, &ops); err != nil || !w.patches["tenant"][0].JSON {
		t.Fatalf("patch %s: %v, want a JSON patch", w.patches["tenant"][0].Body, err)
	}
	removed := map[string]bool{}
	for i := 0; i < len(ops); i += 2 {
		test, remove := ops[i], ops[i+1]
		if test.Op != "test" || test.Value != old || remove.Op != "remove" || remove.Path != test.Path {
			t.Fatalf("ops %d, %d: %+v, %+v; want a test of the record as listed, then its removal", i, i+1, test, remove)
		}
		removed[remove.Path] = true
	}
	for key := range pairs {
		if want := strings.HasPrefix(key, status.PairAnnotationPrefix+"gone-"); removed[write.AnnotationPointer(key)] != want {
			t.Errorf("%s removed: %v, want %v", key, !want, want)
		}
	}
}

// TestStaleRecordsBounded: a sweep patches at most MaxStaleNamespaces
// namespaces and says how many records it left; the next removes the
// rest.
func TestStaleRecordsBounded(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	old := fmt.Sprintf(`{"written":%q}`, now.Add(-2*StaleRecordAge).Format(time.RFC3339))
	namespaces := map[string]cluster.Namespace{}
	for i := range MaxStaleNamespaces + 3 {
		name := fmt.Sprintf("ns-%02d", i)
		namespaces[name] = cluster.Namespace{Name: name, UID: types.UID("u-" + name), Pairs: cluster.AnnotationsOf(map[string]string{status.PairAnnotationPrefix + "a": old, status.PairAnnotationPrefix + "b": old})}
	}
	w := &patchRecorder{Writer: dryRun, patches: map[string][]write.Patch{}}
	done := staleAt(now, w).Remove(t.Context(), namespaces, nil)
	if len(w.patches) != MaxStaleNamespaces || done.Removed != 2*MaxStaleNamespaces || done.Left != 6 || done.LeftNamespaces != 3 {
		t.Fatalf("%d namespaces patched, %+v; want %d, %d removed, 6 left on 3 namespaces", len(w.patches), done, MaxStaleNamespaces, 2*MaxStaleNamespaces)
	}
	for name := range w.patches {
		delete(namespaces, name)
	}
	w.patches = map[string][]write.Patch{}
	done = staleAt(now.Add(5*time.Minute), w).Remove(t.Context(), namespaces, nil)
	if len(w.patches) != 3 || done.Removed != 6 || done.Left != 0 {
		t.Errorf("next sweep: %d namespaces patched, %+v; want the 3 left", len(w.patches), done)
	}
}

// dryRun writes nothing: the recording writers embed it.
var dryRun = write.New(nil, nil, nil, nil, true)
