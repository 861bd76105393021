package write

import (
	"context"

	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nsman/nsman/internal/cluster"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// Uncertain reports an error after which an API request may or may not
// have taken effect: no answer, or a server error.
func Uncertain(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return status.Status().Code >= 500 || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}

// ErrChanged: what the decision rests on changed since the sweep listed
// the subject.
var ErrChanged = errors.New("changed since this sweep listed it")

// ChangedSinceListed reports a write refused because the subject is not as
// listed any more.
func ChangedSinceListed(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsNotFound(err) || errors.Is(err, ErrChanged)
}

// LostClaim reports the outcome of a claimed action refused because the
// claim is not this sweep's any more: a JSON patch whose test failed, or
// whose tested path is gone, is answered 422 (Invalid).
func LostClaim(err error) bool { return apierrors.IsInvalid(err) }

// recordTimeout bounds a write of a record, made even after an interrupt,
// so that a claim is released and a failure seen.
const recordTimeout = 5 * time.Second

// AsListed calls write with namespace ns's resourceVersion as listed; when
// the namespace changed since, it is read again (reread) and written at the
// version read if unchanged says the decision stands, else ErrChanged.
func AsListed(ctx context.Context, ns cluster.Namespace, reread func(ctx context.Context, name string) (cluster.Namespace, bool, error), unchanged func(listed, now cluster.Namespace) bool, write func(resourceVersion string) error) error {
	resourceVersion := ns.ResourceVersion
	return RetryOnConflict(func() error {
		err := write(resourceVersion)
		if !apierrors.IsConflict(err) {
			return err
		}
		now, exists, rerr := reread(ctx, ns.Name)
		switch {
		case rerr != nil:
			return fmt.Errorf("namespace %s %w (reading it again failed: %v)", ns.Name, ErrChanged, rerr)
		case !exists || !unchanged(ns, now):
			return fmt.Errorf("namespace %s %w", ns.Name, ErrChanged)
		case now.ResourceVersion == resourceVersion:
			return fmt.Errorf("refused: %v", err) // a 409 of no precondition (a webhook's)
		}
		resourceVersion = now.ResourceVersion
		return err
	})
}

// PatchManagerRecord patches manager obj through w, retrying transient
// failures (see Retry). A manager gone (with its namespace) needs nothing.
func PatchManagerRecord(ctx context.Context, w Writer, patch Patch, obj *unstructured.Unstructured) error {
	err := Retry(ctx, func(ctx context.Context) error {
		return w.PatchManager(ctx, obj.GetNamespace(), obj.GetName(), patch)
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Retry makes a record's write, retrying transient failures, within
// recordTimeout even after an interrupt.
func Retry(ctx context.Context, write func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	return OnError(wait.Backoff{Steps: 4, Duration: 200 * time.Millisecond, Factor: 2}, transient, func() error {
		return write(ctx)
	})
}

// OnError is retry.OnError answering the last attempt's error: retry.OnError
// answers nil for one that wraps a context's end (wait.Interrupted), which
// would say a write cut by its deadline was made.
func OnError(backoff wait.Backoff, retriable func(error) bool, fn func() error) error {
	var last error
	_ = retry.OnError(backoff, retriable, func() error {
		last = fn()
		return last
	})
	return last
}

// RetryOnConflict is retry.RetryOnConflict answering the last attempt's
// error (see OnError).
func RetryOnConflict(fn func() error) error {
	return OnError(retry.DefaultRetry, apierrors.IsConflict, fn)
}

// transient reports an error that a retry may not meet again.
func transient(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}
