package write

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nsman/nsman/internal/cluster"
)

var namespacesResource = schema.GroupResource{Resource: "namespaces"}

// The API errors the classifiers below are asked about, by the status the
// API server answers with.
var (
	errConflict     = apierrors.NewConflict(namespacesResource, "team-a", errors.New("the object has been modified"))
	errNotFound     = apierrors.NewNotFound(namespacesResource, "team-a")
	errForbidden    = apierrors.NewForbidden(namespacesResource, "team-a", errors.New("denied"))
	errInvalid      = apierrors.NewInvalid(schema.GroupKind{Kind: "NamespaceManager"}, "m", nil)
	errServerTime   = apierrors.NewServerTimeout(namespacesResource, "patch", 1)
	errTimeout      = apierrors.NewTimeoutError("request did not complete", 1)
	errTooMany      = apierrors.NewTooManyRequests("slow down", 1)
	errInternal     = apierrors.NewInternalError(errors.New("etcd"))
	errUnavailable  = apierrors.NewServiceUnavailable("apiserver shutting down")
	errReset        = fmt.Errorf("patch namespace team-a: %w", syscall.ECONNRESET)
	errDeadline     = fmt.Errorf("patch namespace team-a: %w", context.DeadlineExceeded)
	errChangedSince = fmt.Errorf("namespace team-a %w", ErrChanged)
)

// What each classifier says of each error: whether a write may have taken
// effect (Uncertain), whether the subject moved under the sweep
// (ChangedSinceListed), whether a claim passed to another (LostClaim), and whether
// a record's write is worth another try (transient).
func TestClassify(t *testing.T) {
	tests := []struct {
		name                                            string
		err                                             error
		uncertain, changedSinceListed, lostClaim, retry bool
	}{
		{name: "connection reset", err: errReset, uncertain: true},
		{name: "client timeout", err: errDeadline, uncertain: true},
		{name: "internal error (500)", err: errInternal, uncertain: true, retry: true},
		{name: "service unavailable (503)", err: errUnavailable, uncertain: true, retry: true},
		{name: "server timeout", err: errServerTime, uncertain: true, retry: true},
		{name: "timeout (504)", err: errTimeout, uncertain: true, retry: true},
		{name: "too many requests (429)", err: errTooMany, retry: true},
		{name: "conflict (409)", err: errConflict, changedSinceListed: true},
		{name: "not found (404)", err: errNotFound, changedSinceListed: true},
		{name: "forbidden (403)", err: errForbidden},
		{name: "invalid (422)", err: errInvalid, lostClaim: true},
		{name: "changed since listed", err: errChangedSince, uncertain: true, changedSinceListed: true},
		{name: "wrapped conflict", err: fmt.Errorf("patch: %w", errConflict), changedSinceListed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Uncertain(tt.err); got != tt.uncertain {
				t.Errorf("Uncertain(%v) = %v, want %v", tt.err, got, tt.uncertain)
			}
			if got := ChangedSinceListed(tt.err); got != tt.changedSinceListed {
				t.Errorf("ChangedSinceListed(%v) = %v, want %v", tt.err, got, tt.changedSinceListed)
			}
			if got := LostClaim(tt.err); got != tt.lostClaim {
				t.Errorf("LostClaim(%v) = %v, want %v", tt.err, got, tt.lostClaim)
			}
			if got := transient(tt.err); got != tt.retry {
				t.Errorf("transient(%v) = %v, want %v", tt.err, got, tt.retry)
			}
		})
	}
}

// A write as listed goes at the version listed; on a conflict the namespace
// is read again and the write made at the version read only while the
// decision still stands, and a 409 that no version explains is not retried.
func TestAsListed(t *testing.T) {
	listed := cluster.Namespace{Name: "team-a", ResourceVersion: "10"}
	moved := cluster.Namespace{Name: "team-a", ResourceVersion: "11"}
	errReread := errors.New("connection refused")
	errSomething := errors.New("something else")

	tests := []struct {
		name string
		// writes are the write's answers in turn, the last repeated.
		writes []error
		// now is what a reread finds, with rerr.
		now       cluster.Namespace
		exists    bool
		rerr      error
		unchanged bool

		wantVersions []string
		wantRereads  int
		wantIs       []error
		wantText     string
		wantNil      bool
	}{
		{
			name:         "written as listed",
			writes:       []error{nil},
			wantVersions: []string{"10"},
			wantNil:      true,
		},
		{
			name:         "moved, decision stands: written at the version read",
			writes:       []error{errConflict, nil},
			now:          moved,
			exists:       true,
			unchanged:    true,
			wantVersions: []string{"10", "11"},
			wantRereads:  1,
			wantNil:      true,
		},
		{
			name:         "moved, decision stands: the second write's refusal returned",
			writes:       []error{errConflict, errForbidden},
			now:          moved,
			exists:       true,
			unchanged:    true,
			wantVersions: []string{"10", "11"},
			wantRereads:  1,
			wantIs:       []error{errForbidden},
		},
		{
			name:         "moved, decision does not stand",
			writes:       []error{errConflict},
			now:          moved,
			exists:       true,
			unchanged:    false,
			wantVersions: []string{"10"},
			wantRereads:  1,
			wantIs:       []error{ErrChanged},
			wantText:     "namespace team-a",
		},
		{
			name:         "gone",
			writes:       []error{errConflict},
			exists:       false,
			unchanged:    true,
			wantVersions: []string{"10"},
			wantRereads:  1,
			wantIs:       []error{ErrChanged},
		},
		{
			name:         "reread fails",
			writes:       []error{errConflict},
			rerr:         errReread,
			wantVersions: []string{"10"},
			wantRereads:  1,
			wantIs:       []error{ErrChanged},
			wantText:     "connection refused",
		},
		{
			name:         "conflict at the same version (a webhook's 409)",
			writes:       []error{errConflict},
			now:          listed,
			exists:       true,
			unchanged:    true,
			wantVersions: []string{"10"},
			wantRereads:  1,
			wantText:     "refused",
		},
		{
			name:         "another refusal, not read again",
			writes:       []error{errSomething},
			wantVersions: []string{"10"},
			wantIs:       []error{errSomething},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var versions []string
			rereads := 0
			reread := func(_ context.Context, name string) (cluster.Namespace, bool, error) {
				rereads++
				if name != listed.Name {
					t.Errorf("reread %q, want %q", name, listed.Name)
				}
				return tt.now, tt.exists, tt.rerr
			}
			unchanged := func(was, now cluster.Namespace) bool {
				if was.ResourceVersion != listed.ResourceVersion || now.ResourceVersion != tt.now.ResourceVersion {
					t.Errorf("unchanged(%q, %q), want the listed and the read namespace", was.ResourceVersion, now.ResourceVersion)
				}
				return tt.unchanged
			}
			write := func(resourceVersion string) error {
				versions = append(versions, resourceVersion)
				return tt.writes[min(len(versions), len(tt.writes))-1]
			}

			err := AsListed(t.Context(), listed, reread, unchanged, write)

			if tt.wantNil != (err == nil) {
				t.Fatalf("error %v, want nil: %v", err, tt.wantNil)
			}
			for _, target := range tt.wantIs {
				if !errors.Is(err, target) {
					t.Errorf("error %v, want one wrapping %v", err, target)
				}
			}
			if tt.wantText != "" && !strings.Contains(fmt.Sprint(err), tt.wantText) {
				t.Errorf("error %v, want one saying %q", err, tt.wantText)
			}
			if apierrors.IsConflict(err) {
				t.Errorf("error %v is a conflict: a caller would retry what this one settled", err)
			}
			if fmt.Sprint(versions) != fmt.Sprint(tt.wantVersions) {
				t.Errorf("written at %v, want %v", versions, tt.wantVersions)
			}
			if rereads != tt.wantRereads {
				t.Errorf("read again %d times, want %d", rereads, tt.wantRereads)
			}
		})
	}
}

// A namespace that keeps moving under a write that keeps standing is not
// chased forever: the conflict comes back after a bounded number of tries.
func TestAsListedKeepsMoving(t *testing.T) {
	listed := cluster.Namespace{Name: "team-a", ResourceVersion: "10"}
	writes, rereads := 0, 0
	reread := func(context.Context, string) (cluster.Namespace, bool, error) {
		rereads++
		return cluster.Namespace{Name: "team-a", ResourceVersion: fmt.Sprint(10 + rereads)}, true, nil
	}
	err := AsListed(t.Context(), listed, reread, func(_, _ cluster.Namespace) bool { return true }, func(string) error {
		writes++
		return errConflict
	})
	if !apierrors.IsConflict(err) {
		t.Errorf("error %v, want the last conflict", err)
	}
	if writes != 5 || rereads != 5 {
		t.Errorf("%d writes and %d rereads, want 5 of each", writes, rereads)
	}
}

// A record's write is retried while the failure is transient, at most four
// times in all, and is made within its own deadline even when the sweep's
// context is cancelled: a claim must be released after an interrupt.
func TestRetry(t *testing.T) {
	tests := []struct {
		name string
		// errs are the write's answers in turn, the last repeated.
		errs      []error
		cancelled bool
		wantCalls int
		wantErr   error
	}{
		{name: "written", errs: []error{nil}, wantCalls: 1},
		{name: "transient, then written", errs: []error{errUnavailable, nil}, wantCalls: 2},
		{name: "transient every time", errs: []error{errTooMany}, wantCalls: 4, wantErr: errTooMany},
		{name: "not transient", errs: []error{errConflict}, wantCalls: 1, wantErr: errConflict},
		{name: "context cancelled", errs: []error{nil}, cancelled: true, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			if tt.cancelled {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				cancel()
			}
			calls := 0
			// The deadline is set after start, so it lies a little more
			// than the record timeout past it, whichever the try.
			start := time.Now()
			err := Retry(ctx, func(ctx context.Context) error {
				calls++
				if ctx.Err() != nil {
					t.Errorf("write %d: context done: %v", calls, ctx.Err())
				}
				deadline, ok := ctx.Deadline()
				if ahead := deadline.Sub(start); !ok || ahead < 5*time.Second || ahead > 6*time.Second {
					t.Errorf("write %d: deadline %v ahead (set: %v), want about 5s", calls, ahead, ok)
				}
				return tt.errs[min(calls, len(tt.errs))-1]
			})
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if calls != tt.wantCalls {
				t.Errorf("%d writes, want %d", calls, tt.wantCalls)
			}
		})
	}
}

// managerRecorder answers PatchManager in turn and says what it was asked.
type managerRecorder struct {
	Writer
	errs    []error
	patches []string
}

func (w *managerRecorder) PatchManager(_ context.Context, namespace, name string, patch Patch) error {
	w.patches = append(w.patches, namespace+"/"+name+" "+patch.Subresource+" "+string(patch.Body))
	return w.errs[min(len(w.patches), len(w.errs))-1]
}

// A manager's record goes through the Writer given; a manager gone with its
// namespace needs no record, a transient failure is tried again, and any
// other failure is the caller's to see.
func TestPatchManagerRecord(t *testing.T) {
	const want = "team-a/m status {\"status\":{\"state\":\"fired\"}}"
	tests := []struct {
		name        string
		errs        []error
		wantPatches int
		wantErr     error
	}{
		{name: "recorded", errs: []error{nil}, wantPatches: 1},
		{name: "manager gone", errs: []error{errNotFound}, wantPatches: 1},
		{name: "transient, then recorded", errs: []error{errInternal, nil}, wantPatches: 2},
		{name: "refused", errs: []error{errForbidden}, wantPatches: 1, wantErr: errForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &managerRecorder{Writer: New(nil, nil, nil, nil, true), errs: tt.errs}
			obj := &unstructured.Unstructured{}
			obj.SetNamespace("team-a")
			obj.SetName("m")

			err := PatchManagerRecord(t.Context(), w, Patch{Subresource: "status", Body: []byte(`{"status":{"state":"fired"}}`)}, obj)

			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if len(w.patches) != tt.wantPatches {
				t.Fatalf("patches %q, want %d", w.patches, tt.wantPatches)
			}
			for i, got := range w.patches {
				if got != want {
					t.Errorf("patch %d: %q, want %q", i, got, want)
				}
			}
		})
	}
}

// A write cut by its context's end is that error, not a write made:
// retry.RetryOnConflict and retry.OnError answer nil for it, which said a
// DELETE, a record or a workload patch that never happened was done.
func TestCutByTheDeadline(t *testing.T) {
	cut := &url.Error{Op: "Patch", URL: "https://api/", Err: context.DeadlineExceeded}
	listed := cluster.Namespace{Name: "team-a", ResourceVersion: "10"}
	reread := func(context.Context, string) (cluster.Namespace, bool, error) { return listed, true, nil }
	unchanged := func(cluster.Namespace, cluster.Namespace) bool { return true }
	if err := AsListed(t.Context(), listed, reread, unchanged, func(string) error { return cut }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("AsListed: %v, want the deadline's error", err)
	}
	if err := Retry(t.Context(), func(context.Context) error { return cut }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Retry: %v, want the deadline's error", err)
	}
	calls := 0
	if err := RetryOnConflict(func() error {
		if calls++; calls == 1 {
			return errConflict
		}
		return cut
	}); !errors.Is(err, context.DeadlineExceeded) || calls != 2 {
		t.Errorf("RetryOnConflict: %v after %d calls, want the deadline's error after 2", err, calls)
	}
}
