package probe

import (
	"context"
	"encoding/json"
	"fmt"

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
// changed back by someone while the namespace sleeps, or created since. It
// is a request per patch per namespace asleep and per sweep, apart from
// the index: which kinds a policy patches is known only from it.
func (a *Awake) patchedIn(ctx context.Context, namespace string, patches []patch.Patch) ([]Awoken, bool, error) {
	selections, err := a.kinds.Patched(a.reads.Clients.Kube, patches)
	if err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.reads.NamespaceTimeout())
	defer cancel()
	var out []Awoken
	more := false
	for i, sel := range selections {
		list := func() *rest.Request {
			return a.reads.Clients.Kube.Discovery().RESTClient().Get().AbsPath(ResourcePath(sel.Kind.Resource, namespace)...)
		}
		opts := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel.Labels).String()}
		err := cluster.EachStreamed(ctx, a.reads.PageSize, opts, list, func(raw *json.RawMessage) error {
			w, awake, err := patchedAwoken(sel.Kind, patches[i], *raw)
			switch {
			case err != nil:
				return err
			case !awake:
				return nil
			case len(out) == MaxAwakeIn:
				more = true
				return errNamespaceFull
			}
			out = append(out, w)
			return nil
		})
		if err == errNamespaceFull {
			break
		}
		if err != nil {
			return nil, false, fmt.Errorf("list %s in %s: %w", sel.Kind.Resource.GroupResource(), namespace, err)
		}
	}
	return out, more, nil
}

// patchedAwoken is raw, an object of kind as listed, as an Awoken, and
// whether it is awake: not as p makes it, nor labelled to stay awake.
func patchedAwoken(kind Kind, p patch.Patch, raw json.RawMessage) (Awoken, bool, error) {
	if len(raw) > maxPatchedAwakeBytes {
		return Awoken{}, false, fmt.Errorf("%s: an object of %d bytes as listed, more than the %d nsman reads of one", kind.Name, len(raw), maxPatchedAwakeBytes)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return Awoken{}, false, fmt.Errorf("%s: %w", kind.Name, err)
	}
	if patch.Applied(obj, p.Merge) {
		return Awoken{}, false, nil
	}
	var f awakeFields
	if err := json.Unmarshal(raw, &f); err != nil {
		return Awoken{}, false, fmt.Errorf("%s: %w", kind.Name, err)
	}
	m := &f.Metadata
	if m.Labels[status.KeepAwakeLabel] == "true" {
		return Awoken{}, false, nil
	}
	_, undone := m.Annotations[kind.Way.Record()]
	return Awoken{Kind: kind.Name, Group: kind.Resource.Group, Name: m.Name, Undone: undone, By: f.lastSet(kind.Way.AwakeField()), way: kind.Way, parked: true}, true, nil
}
