package probe

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/rest"

	"github.com/nsman/nsman/internal/cluster"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy/patch"
)

// maxPatchedAwakeBytes bounds an object of a patch's kind that Awake reads
// (as execute.MaxWholeBytes bounds what a sleep reads): one larger is
// not read, and the read fails, saying so.
const maxPatchedAwakeBytes = 1 << 20

// patchedIn lists, in namespace, the objects of each patch's kind (of
// patches) that its labels pick and that are not as the patch makes them:
// changed back by someone while the namespace sleeps, or created since.
// Namespace by namespace, it is a request per patch; indexed (past
// AwakeIndexAfter namespaces asked about), each patch's kind is listed
// once, cluster-wide (patchedIndex), and a namespace is answered from
// that, unless that failed or held more than MaxAwake.
func (a *Awake) patchedIn(ctx context.Context, namespace string, patches []patch.Patch, indexed bool) ([]Awoken, bool, error) {
	selections, err := a.kinds.Patched(a.reads.Clients.Kube, patches)
	if err != nil {
		return nil, false, err
	}
	var out []Awoken
	more := false
	for i, sel := range selections {
		var byNamespace map[string]*awakeIn
		if indexed {
			byNamespace = a.patchedIndex(ctx, sel, patches[i])
		}
		if byNamespace == nil {
			if byNamespace, err = a.listPatched(ctx, sel, patches[i], namespace, 0); err != nil {
				return nil, false, err
			}
		}
		in := cmp.Or(byNamespace[namespace], &awakeIn{})
		out = append(out, in.found...)
		if more = more || in.more; len(out) >= MaxAwakeIn {
			return out[:MaxAwakeIn], true, nil
		}
	}
	return out, more, nil
}

// patchIndex is one patch's index: the objects of its kind awake,
// cluster-wide, by namespace; nil when listing them failed or held more
// than MaxAwake.
type patchIndex struct {
	once  sync.Once
	index map[string]*awakeIn
}

// patchedIndex lists, once a sweep for each patch, the objects of sel's
// kind awake cluster-wide (see listPatched); nil when that failed.
func (a *Awake) patchedIndex(ctx context.Context, sel Selection, p patch.Patch) map[string]*awakeIn {
	key, _ := json.Marshal(struct {
		Resource string
		Labels   map[string]string
		Merge    map[string]any
	}{sel.Kind.Resource.String(), sel.Labels, p.Merge})
	v, _ := a.patched.LoadOrStore(string(key), &patchIndex{})
	idx := v.(*patchIndex)
	idx.once.Do(func() {
		index, err := a.listPatched(ctx, sel, p, metav1.NamespaceAll, MaxAwake)
		if err != nil {
			a.reads.Log.Warn("reading a patch's objects namespace by namespace", "error", err.Error())
			return
		}
		idx.index = index
	})
	return idx.index
}

// listPatched lists sel's objects in namespace (every namespace, with
// metav1.NamespaceAll) that are not as p makes them, keeping at most
// MaxAwakeIn of a namespace (then its more is set), and fails with
// errTooManyAwake past max kept in all (0: no bound). A namespace's list
// is bounded by Reads.NamespaceTimeout, the cluster-wide one by ClaimTTL.
func (a *Awake) listPatched(ctx context.Context, sel Selection, p patch.Patch, namespace string, max int) (map[string]*awakeIn, error) {
	timeout := a.reads.NamespaceTimeout()
	if namespace == metav1.NamespaceAll {
		timeout = a.reads.ClaimTTL
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	list := func() *rest.Request {
		return a.reads.Clients.Kube.Discovery().RESTClient().Get().AbsPath(ResourcePath(sel.Kind.Resource, namespace)...)
	}
	out := map[string]*awakeIn{}
	kept := 0
	opts := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel.Labels).String()}
	err := cluster.EachStreamed(ctx, a.reads.PageSize, opts, list, func(raw *json.RawMessage) error {
		w, ns, awake, err := patchedAwoken(sel.Kind, p, *raw)
		if err != nil || !awake {
			return err
		}
		in := out[ns]
		if in == nil {
			in = &awakeIn{}
			out[ns] = in
		}
		switch {
		case len(in.found) == MaxAwakeIn:
			in.more = true
		case max > 0 && kept == max:
			return errTooManyAwake
		default:
			kept++
			in.found = append(in.found, w)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", sel.Kind.Resource.GroupResource(), err)
	}
	return out, nil
}

// patchedAwoken is raw, an object of kind as listed, as an Awoken, its
// namespace, and whether it is awake: not as p makes it, nor labelled to
// stay awake.
func patchedAwoken(kind Kind, p patch.Patch, raw json.RawMessage) (Awoken, string, bool, error) {
	if len(raw) > maxPatchedAwakeBytes {
		return Awoken{}, "", false, fmt.Errorf("%s: an object of %d bytes as listed, more than the %d nsman reads of one", kind.Name, len(raw), maxPatchedAwakeBytes)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return Awoken{}, "", false, fmt.Errorf("%s: %w", kind.Name, err)
	}
	if patch.Applied(obj, p.Merge) {
		return Awoken{}, "", false, nil
	}
	var f awakeFields
	if err := json.Unmarshal(raw, &f); err != nil {
		return Awoken{}, "", false, fmt.Errorf("%s: %w", kind.Name, err)
	}
	m := &f.Metadata
	if m.Labels[status.KeepAwakeLabel] == "true" {
		return Awoken{}, "", false, nil
	}
	_, undone := m.Annotations[kind.Way.Record()]
	return Awoken{Kind: kind.Name, Group: kind.Resource.Group, Name: m.Name, Undone: undone, By: f.lastSet(kind.Way.AwakeField()), way: kind.Way, parked: true}, m.Namespace, true, nil
}
