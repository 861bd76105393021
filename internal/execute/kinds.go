package execute

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/policy"
)

// Kind is a kind of workload nsman puts to sleep and wakes, and the way it
// does: the replicas of a kind with a scale subresource, a CronJob's
// suspend, a KEDA ScaledObject's paused replicas.
type Kind struct {
	// Name is the kind's name as its API serves it: Deployment, Rollout.
	Name     string
	Resource schema.GroupVersionResource
	// found is set for a kind found by discovery, whose objects controlled
	// by another (a Deployment's ReplicaSets) are their controller's to
	// scale, and left alone.
	found bool
	way   way
}

// Selection is a kind and the labels its workloads must carry (none: all).
type Selection struct {
	Kind   Kind
	Labels map[string]string
}

// way is how a kind sleeps and wakes. Each writes one merge patch that
// changes the workload and its record (an annotation of the state the
// sleep undid) together, so that no write leaves the one without the
// other.
type way interface {
	// sleep returns the patch that puts w to sleep and the effect; a nil
	// patch when w sleeps already (it is then not written to, and keeps
	// any record).
	sleep(id string, w *unstructured.Unstructured) (map[string]any, string)
	// wake returns the patch that brings back what w's record says, and
	// the effect; a nil patch when w has no record. A workload changed by
	// someone else since the sleep keeps its state and loses the record:
	// kept, it would bring an old state back at a later wake.
	wake(id string, w *unstructured.Unstructured) (map[string]any, string, error)
}

// Workload resources nsman writes to without discovery.
var (
	DeploymentsResource   = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	StatefulSetsResource  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	CronJobsResource      = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}
	ScaledObjectsResource = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}
	knownKinds            = map[string]Kind{
		policy.KindDeployment:   {Name: policy.KindDeployment, Resource: DeploymentsResource, way: replicas{}},
		policy.KindStatefulSet:  {Name: policy.KindStatefulSet, Resource: StatefulSetsResource, way: replicas{}},
		policy.KindCronJob:      {Name: policy.KindCronJob, Resource: CronJobsResource, way: suspend{}},
		policy.KindScaledObject: {Name: policy.KindScaledObject, Resource: ScaledObjectsResource, way: pause{}},
	}
	// defaultSelections are what a SCALE_DOWN without selectors scales, as
	// the original operator did.
	defaultSelections = []Selection{{Kind: knownKinds[policy.KindDeployment]}, {Kind: knownKinds[policy.KindStatefulSet]}}
)

// KedaPausedReplicas is the annotation that holds a ScaledObject's target
// at that many replicas, whatever its triggers say.
const KedaPausedReplicas = "autoscaling.keda.sh/paused-replicas"

// Kinds resolves selectors' kinds, asking the cluster's discovery once,
// and only when a selector names a kind that is none of policy.KnownKinds.
// Its zero value is ready; it is safe for concurrent use.
type Kinds struct {
	once  sync.Once
	found []Kind
	err   error
}

// Resolve returns the selections of selectors, defaultSelections for none,
// or an error naming every selector whose kind the cluster does not serve
// with a scale subresource: a SCALE_DOWN resolves all of them before it
// writes anything.
func (k *Kinds) Resolve(kube kubernetes.Interface, selectors []policy.Selector) ([]Selection, error) {
	if len(selectors) == 0 {
		return defaultSelections, nil
	}
	out := make([]Selection, 0, len(selectors))
	var errs []error
	for i, sel := range selectors {
		kind, ok := knownKinds[sel.Kind]
		if !ok {
			var err error
			if kind, err = k.find(kube, sel.Kind); err != nil {
				errs = append(errs, fmt.Errorf("selectors[%d]: %w", i, err))
				continue
			}
		}
		out = append(out, Selection{Kind: kind, Labels: sel.Labels})
	}
	return out, errors.Join(errs...)
}

// All is every kind nsman may have put to sleep in the cluster: the known
// ones and each kind with a scale subresource discovery finds.
func (k *Kinds) All(kube kubernetes.Interface) ([]Selection, error) {
	found, err := k.discover(kube)
	out := make([]Selection, 0, len(knownKinds)+len(found))
	for _, name := range policy.KnownKinds {
		out = append(out, Selection{Kind: knownKinds[name]})
	}
	for _, kind := range found {
		if !slices.ContainsFunc(out, func(s Selection) bool { return s.Kind.Resource.GroupResource() == kind.Resource.GroupResource() }) {
			out = append(out, Selection{Kind: kind})
		}
	}
	return out, err
}

// find is the kind with a scale subresource that name (Kind or Kind.group)
// names, the kind in any letter case.
func (k *Kinds) find(kube kubernetes.Interface, name string) (Kind, error) {
	found, err := k.discover(kube)
	kind, group, grouped := strings.Cut(name, ".")
	var matches []Kind
	for _, f := range found {
		if strings.EqualFold(f.Name, kind) && (!grouped || f.Resource.Group == group) {
			matches = append(matches, f)
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0], nil
	case len(matches) > 1:
		names := make([]string, len(matches))
		for i, m := range matches {
			names[i] = m.Name + "." + m.Resource.Group
		}
		return Kind{}, fmt.Errorf("kind %s is served by several API groups (%s): name one as Kind.group", name, strings.Join(names, ", "))
	case err != nil:
		return Kind{}, fmt.Errorf("kind %s: discovery failed: %w", name, err)
	}
	return Kind{}, fmt.Errorf("kind %s: the cluster serves no kind of that name with a scale subresource", name)
}

// discover lists, once, every namespaced kind the API server serves with a
// scale subresource, in its group's preferred version. Groups that failed
// discovery are missing, and the error says which.
func (k *Kinds) discover(kube kubernetes.Interface) ([]Kind, error) {
	k.once.Do(func() {
		groups, lists, err := discovery.ServerGroupsAndResources(kube.Discovery())
		k.err = err
		preferred := map[string]bool{}
		for _, g := range groups {
			preferred[g.PreferredVersion.GroupVersion] = true
		}
		for _, list := range lists {
			if !preferred[list.GroupVersion] {
				continue
			}
			gv, perr := schema.ParseGroupVersion(list.GroupVersion)
			if perr != nil {
				continue
			}
			k.found = append(k.found, scaleKinds(gv, list.APIResources)...)
		}
	})
	return k.found, k.err
}

// scaleKinds are the namespaced resources of gv that have a scale
// subresource and can be listed and patched.
func scaleKinds(gv schema.GroupVersion, resources []metav1.APIResource) []Kind {
	var out []Kind
	for _, r := range resources {
		parent, sub, ok := strings.Cut(r.Name, "/")
		if !ok || sub != "scale" {
			continue
		}
		i := slices.IndexFunc(resources, func(p metav1.APIResource) bool { return p.Name == parent })
		if i < 0 || !resources[i].Namespaced || !slices.Contains(resources[i].Verbs, "list") || !slices.Contains(resources[i].Verbs, "patch") {
			continue
		}
		out = append(out, Kind{Name: resources[i].Kind, Resource: gv.WithResource(parent), found: true, way: replicas{}})
	}
	return out
}

// replicas is the way of a kind with a scale subresource, replicas at
// spec.replicas: scaled to zero, the count it had recorded.
type replicas struct{}

// sleep records the count w had, overwriting any record: a record is always
// the count the workload had when nsman last scaled it to zero, so an older
// one, left by a sleep undone by hand since, must not survive to be
// restored.
func (replicas) sleep(id string, w *unstructured.Unstructured) (map[string]any, string) {
	n := SpecReplicas(w)
	if n == 0 {
		return nil, ""
	}
	return map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{status.ReplicasAnnotation: strconv.FormatInt(n, 10)}},
		"spec":     map[string]any{"replicas": 0},
	}, fmt.Sprintf("scale %s from %d to 0", id, n)
}

func (replicas) wake(id string, w *unstructured.Unstructured) (map[string]any, string, error) {
	recorded, ok := w.GetAnnotations()[status.ReplicasAnnotation]
	if !ok {
		return nil, "", nil
	}
	n, err := strconv.ParseInt(recorded, 10, 32)
	if err != nil || n < 0 {
		return nil, "", fmt.Errorf("%s: annotation %s=%q is not a replica count", id, status.ReplicasAnnotation, recorded)
	}
	drop := dropRecord(status.ReplicasAnnotation)
	if current := SpecReplicas(w); current != 0 {
		return map[string]any{"metadata": drop},
			fmt.Sprintf("leave %s at %d replicas: scaled since nsman scaled it down; drop its record of %d", id, current, n), nil
	}
	return map[string]any{"metadata": drop, "spec": map[string]any{"replicas": n}}, fmt.Sprintf("scale %s from 0 to %d", id, n), nil
}

// suspend is a CronJob's way: suspended, and resumed only if nsman
// suspended it. One suspended before is not written to, and stays so.
type suspend struct{}

func (suspend) sleep(id string, w *unstructured.Unstructured) (map[string]any, string) {
	if suspended, _, _ := unstructured.NestedBool(w.Object, "spec", "suspend"); suspended {
		return nil, ""
	}
	return map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{status.SuspendAnnotation: "false"}},
		"spec":     map[string]any{"suspend": true},
	}, "suspend " + id
}

func (suspend) wake(id string, w *unstructured.Unstructured) (map[string]any, string, error) {
	recorded, ok := w.GetAnnotations()[status.SuspendAnnotation]
	if !ok {
		return nil, "", nil
	}
	if recorded != "false" {
		return nil, "", fmt.Errorf("%s: annotation %s=%q is not \"false\"", id, status.SuspendAnnotation, recorded)
	}
	drop := dropRecord(status.SuspendAnnotation)
	if suspended, _, _ := unstructured.NestedBool(w.Object, "spec", "suspend"); !suspended {
		return map[string]any{"metadata": drop}, fmt.Sprintf("leave %s running: resumed since nsman suspended it; drop its record", id), nil
	}
	return map[string]any{"metadata": drop, "spec": map[string]any{"suspend": false}}, "resume " + id, nil
}

// pause is a KEDA ScaledObject's way: paused at zero replicas, the pause it
// had before (none, or another count) recorded and brought back.
type pause struct{}

func (pause) sleep(id string, w *unstructured.Unstructured) (map[string]any, string) {
	prior, had := w.GetAnnotations()[KedaPausedReplicas]
	if had && prior == "0" {
		return nil, ""
	}
	effect := "pause " + id + " at 0 replicas"
	if had {
		effect += " (paused at " + prior + " before)"
	}
	return map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		KedaPausedReplicas: "0", status.PausedReplicasAnnotation: prior,
	}}}, effect
}

func (pause) wake(id string, w *unstructured.Unstructured) (map[string]any, string, error) {
	recorded, ok := w.GetAnnotations()[status.PausedReplicasAnnotation]
	if !ok {
		return nil, "", nil
	}
	if n, err := strconv.ParseInt(recorded, 10, 32); recorded != "" && (err != nil || n < 0) {
		return nil, "", fmt.Errorf("%s: annotation %s=%q is neither empty nor a replica count", id, status.PausedReplicasAnnotation, recorded)
	}
	annotations := map[string]any{status.PausedReplicasAnnotation: nil}
	if current, paused := w.GetAnnotations()[KedaPausedReplicas]; !paused || current != "0" {
		return map[string]any{"metadata": map[string]any{"annotations": annotations}},
			fmt.Sprintf("leave %s: its pause changed since nsman paused it; drop its record", id), nil
	}
	if recorded == "" {
		annotations[KedaPausedReplicas] = nil
		return map[string]any{"metadata": map[string]any{"annotations": annotations}}, "unpause " + id, nil
	}
	annotations[KedaPausedReplicas] = recorded
	return map[string]any{"metadata": map[string]any{"annotations": annotations}}, fmt.Sprintf("pause %s at %s replicas again, as before", id, recorded), nil
}

// dropRecord is the metadata of a patch that removes annotation key.
func dropRecord(key string) map[string]any {
	return map[string]any{"annotations": map[string]any{key: nil}}
}
