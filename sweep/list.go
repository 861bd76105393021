package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/kubernetes/scheme"
)

// A sweep lists NamespaceManagers as JSON and decodes of each only what it
// reads. The dynamic client decodes a page in full more than once, and every
// field of every manager into maps, the managed fields and kubectl's
// last-applied copy (often most of a manager) included: at 10,000 managers
// that was half of a no-op sweep's CPU time and most of its garbage
// (BenchmarkDecodePage and BenchmarkDecodePageUnstructured).

// listed is a NamespaceManager as a sweep reads it from its list.
type listed struct {
	// obj holds what policy.Parse and the sweep read: apiVersion, kind,
	// name, namespace, uid, resourceVersion, generation, every annotation but
	// kubectl's last-applied copy, and spec, as unstructured content, so
	// that Parse judges whatever the original CRD let through.
	obj *unstructured.Unstructured
	// status is the status as stored, decoded by stateStore.read only where
	// it is nsman's record.
	status json.RawMessage
}

// managerPage is one page of a NamespaceManager list, decoded no further
// than a sweep needs.
type managerPage struct {
	Metadata metav1.ListMeta `json:"metadata"`
	Items    []listedItem    `json:"items"`
}

type listedItem struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Metadata is validated by the API server under either CRD, so it
	// decodes into types; fields not named here are skipped unread.
	Metadata struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		UID             types.UID         `json:"uid"`
		ResourceVersion string            `json:"resourceVersion"`
		Generation      int64             `json:"generation"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	// Spec is anything the CRD let through: an object, a list, a string,
	// null. Numbers are kept as int64 where they are integers, as in
	// unstructured content.
	Spec   any             `json:"spec"`
	Status json.RawMessage `json:"status"`
}

// decodePage decodes a page of a NamespaceManager list. Keys match
// case-sensitively, as the API server's own decoding does.
func decodePage(data []byte) (managerPage, error) {
	var page managerPage
	if err := utiljson.Unmarshal(data, &page); err != nil {
		return managerPage{}, fmt.Errorf("decode a page of NamespaceManagers: %w", err)
	}
	return page, nil
}

// listed returns item i of the page.
func (p *managerPage) listed(i int) listed {
	it := &p.Items[i]
	meta := map[string]any{
		"name":            it.Metadata.Name,
		"namespace":       it.Metadata.Namespace,
		"uid":             string(it.Metadata.UID),
		"resourceVersion": it.Metadata.ResourceVersion,
		"generation":      it.Metadata.Generation,
	}
	annotations := make(map[string]any, len(it.Metadata.Annotations))
	for k, v := range it.Metadata.Annotations {
		if k != lastApplied {
			annotations[k] = v
		}
	}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	obj := map[string]any{"apiVersion": it.APIVersion, "kind": it.Kind, "metadata": meta}
	if it.Spec != nil {
		obj["spec"] = it.Spec
	}
	return listed{obj: &unstructured.Unstructured{Object: obj}, status: it.Status}
}

// lastApplied is the annotation in which kubectl apply keeps the manifest.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// eachManager calls fn with every NamespaceManager the sweep selects, in
// list order, one page at a time: the page in hand and the next one being
// fetched, none queued, so that a sweep holds at most two pages of managers
// however many there are. A page refused 410 with a continue token is
// fetched again with that token (at most maxExpiredContinues times); any
// other error stops it. Once ctx is done, it finishes the page in hand and
// hands on no other. With all, it lists every manager of the cluster,
// whatever --namespace and --selector limit the sweep to.
func (s *Sweeper) eachManager(ctx context.Context, all bool, fn func(listed)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type fetched struct {
		page managerPage
		err  error
	}
	pages := make(chan fetched)
	go func() {
		defer close(pages)
		opts := metav1.ListOptions{LabelSelector: s.cfg.LabelSelector, Limit: s.cfg.PageSize}
		namespace := s.cfg.Namespace
		if all {
			opts.LabelSelector, namespace = "", ""
		}
		for expired := 0; ; {
			page, err := s.listPage(ctx, namespace, opts)
			if next, ok := continueAfterExpiry(err); ok && opts.Continue != "" && expired < maxExpiredContinues {
				// The list's snapshot was compacted away between two pages.
				// The server's token resumes after the last manager listed,
				// from a newer snapshot: a manager created or deleted since
				// may be missed, none is listed twice.
				expired++
				s.log.Warn("continue token expired; listing the rest from a newer snapshot", "error", err.Error())
				opts.Continue = next
				continue
			}
			select {
			case pages <- fetched{page, err}:
			case <-ctx.Done():
				return
			}
			if err != nil || page.Metadata.Continue == "" {
				return
			}
			opts.Continue = page.Metadata.Continue
		}
	}()
	for f := range pages {
		if f.err != nil {
			return f.err
		}
		for i := range f.page.Items {
			fn(f.page.listed(i))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return ctx.Err()
}

// maxExpiredContinues bounds how often one sweep resumes a listing past an
// expired continue token.
const maxExpiredContinues = 3

// continueAfterExpiry returns the continue token that a 410 answer to a
// page request carries, with which the listing resumes where it stopped.
func continueAfterExpiry(err error) (string, bool) {
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		return "", false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Continue == "" {
		return "", false
	}
	return status.Status().Continue, true
}

// listPage fetches and decodes one page of NamespaceManagers.
func (s *Sweeper) listPage(ctx context.Context, namespace string, opts metav1.ListOptions) (managerPage, error) {
	result := s.clients.Managers.Get().
		NamespaceIfScoped(namespace, namespace != "").
		Resource(ManagerResource.Resource).
		SpecificallyVersionedParams(&opts, scheme.ParameterCodec, metav1.Unversioned).
		Do(ctx)
	// Error turns the server's Status into the error it describes; Raw's
	// own error is the same one, undecoded.
	if err := result.Error(); err != nil {
		return managerPage{}, err
	}
	data, _ := result.Raw()
	return decodePage(data)
}
