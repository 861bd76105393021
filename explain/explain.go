// Package explain says who owns a namespace and whether it came back after
// a rule deleted it, and why a namespace being deleted will not go: the
// namespace controller's conditions, the namespace's own finalizers, the
// objects left in it and the finalizers holding them, the API groups that
// could not be discovered and the APIServices that are unavailable (either
// stalls every namespace deletion in the cluster), with what would unblock
// each. It reads only, with the caller's credentials, and never removes a
// finalizer: it names the command a person could choose to run.
package explain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/pager"

	"github.com/nsman/nsman/internal/cluster"
)

// Report is what holds a namespace, and what would unblock it.
type Report struct {
	Namespace string `json:"namespace"`
	// Cluster is what the commands of Unblock name kubectl's cluster with:
	// the --kubeconfig and --context explain was given (none when neither).
	Cluster Cluster `json:"cluster"`
	// Phase is Active or Terminating.
	Phase string `json:"phase"`
	// Created is the namespace's creationTimestamp.
	Created           metav1.Time  `json:"created"`
	DeletionTimestamp *metav1.Time `json:"deletionTimestamp,omitempty"`
	// Conditions are the namespace controller's, as it last wrote them.
	Conditions []corev1.NamespaceCondition `json:"conditions"`
	// Finalizers are the namespace's own: spec.finalizers (kubernetes is
	// the namespace controller's, removed once the content is gone) and
	// metadata.finalizers.
	Finalizers []string `json:"finalizers"`
	// Remaining are the resources with objects left in the namespace.
	Remaining []Resource `json:"remaining"`
	// Unlisted are the resources and API groups whose objects could not be
	// listed or discovered, with why.
	Unlisted []Unlisted `json:"unlisted"`
	// UnavailableAPIServices hold up discovery, and so every namespace
	// deletion in the cluster.
	UnavailableAPIServices []APIService `json:"unavailableAPIServices"`
	// Unblock says what would let the deletion go on, a step each.
	Unblock []Step `json:"unblock"`
	// Owner is who owns the namespace as nsman's sweep reads it, and
	// whether it exists; nil when nothing names one.
	Owner *Owner `json:"owner,omitempty"`
	// CameBack are the rules that deleted a namespace of this name before
	// this one was made: it came back.
	CameBack []CameBack `json:"cameBack,omitempty"`
}

// Options are what Explain reads with besides its clients.
type Options struct {
	// Cluster names the cluster in the commands of Report.Unblock.
	Cluster Cluster
	// ArgoCDNamespace is where an Argo CD Application named by app name
	// alone lives, and the only namespace whose Applications own the
	// namespaces they create (--argocd-namespace, as a sweep's).
	ArgoCDNamespace string
	// Log hears what a sweep's reads warn of (a continue token expired).
	Log *slog.Logger
}

// Resource is one resource with objects left in the namespace.
type Resource struct {
	// Resource is resource.group (resource alone for the core group).
	Resource string `json:"resource"`
	Count    int    `json:"count"`
	// Finalized are those of its objects that carry finalizers.
	Finalized []Object `json:"finalized"`
}

// Object is an object left, and its finalizers.
type Object struct {
	Name       string   `json:"name"`
	Finalizers []string `json:"finalizers"`
}

// Unlisted is a resource or an API group version that could not be read.
type Unlisted struct {
	What  string `json:"what"`
	Error string `json:"error"`
}

// APIService is an aggregated API that is not available.
type APIService struct {
	Name string `json:"name"`
	// Service is namespace/name of the Service behind it.
	Service string `json:"service"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Step is one thing that holds the deletion and what would unblock it.
type Step struct {
	Holds   string `json:"holds"`
	Unblock string `json:"unblock"`
	// Commands are what a person could choose to run, in order: together
	// they release every object the step names, each name shell-quoted.
	// Warning says what they cost. nsman runs none.
	Commands []string `json:"commands,omitempty"`
	Warning  string   `json:"warning,omitempty"`
}

// ErrNotFound: the namespace does not exist (any more).
var ErrNotFound = errors.New("namespace not found")

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// Explain reads who owns namespace and the rules that deleted it before
// it was made, and, while it is being deleted, what holds it, with the
// commands that would release it for the cluster kubectl is told of with
// opts.Cluster. What it cannot read it says in Report.Unlisted.
func Explain(ctx context.Context, c cluster.Clients, namespace string, opts Options) (Report, error) {
	kube, md, dyn := c.Kube, c.Metadata, c.Dynamic
	ns, err := kube.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Report{}, fmt.Errorf("%w: %s", ErrNotFound, namespace)
	}
	if err != nil {
		return Report{}, err
	}
	r := Report{
		Namespace: namespace, Cluster: opts.Cluster, Phase: string(ns.Status.Phase), Created: ns.CreationTimestamp, DeletionTimestamp: ns.DeletionTimestamp,
		Conditions: ns.Status.Conditions, Finalizers: []string{}, Remaining: []Resource{}, Unlisted: []Unlisted{},
		UnavailableAPIServices: []APIService{}, Unblock: []Step{},
	}
	if r.Conditions == nil {
		r.Conditions = []corev1.NamespaceCondition{}
	}
	for _, f := range ns.Spec.Finalizers {
		r.Finalizers = append(r.Finalizers, string(f))
	}
	r.Finalizers = append(r.Finalizers, ns.Finalizers...)
	r.owner(ctx, c, ns, opts.ArgoCDNamespace)
	r.cameBack(ctx, c, ns, opts.Log)
	if ns.DeletionTimestamp == nil {
		return r, nil
	}
	r.apiServices(ctx, dyn)
	r.content(ctx, kube.Discovery(), md, namespace)
	r.namespaceFinalizers(ns)
	return r, nil
}

// content lists every namespaced resource the API serves in namespace.
func (r *Report) content(ctx context.Context, disco discovery.DiscoveryInterface, md metadata.Interface, namespace string) {
	lists, err := disco.ServerPreferredNamespacedResources()
	var failed *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &failed) {
		for _, gv := range slices.SortedFunc(maps.Keys(failed.Groups), func(a, b schema.GroupVersion) int { return strings.Compare(a.String(), b.String()) }) {
			r.Unlisted = append(r.Unlisted, Unlisted{What: "API group " + gv.String(), Error: failed.Groups[gv].Error()})
			r.Unblock = append(r.Unblock, Step{
				Holds:   "the API group " + gv.String() + " cannot be discovered (" + failed.Groups[gv].Error() + "): the namespace controller cannot tell whether the namespace still holds its objects, so no namespace of the cluster finishes deleting",
				Unblock: "make the API that serves it available again (see the unavailable APIServices), or remove its APIService if nothing should serve it any more",
			})
		}
	} else if err != nil {
		r.Unlisted = append(r.Unlisted, Unlisted{What: "discovery", Error: err.Error()})
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range list.APIResources {
			if strings.Contains(res.Name, "/") || !slices.Contains(res.Verbs, "list") {
				continue
			}
			r.list(ctx, md, gv.WithResource(res.Name), res.Kind, namespace)
		}
	}
	slices.SortFunc(r.Remaining, func(a, b Resource) int { return strings.Compare(a.Resource, b.Resource) })
}

// list records what is left of one resource in namespace, a page at a time.
func (r *Report) list(ctx context.Context, md metadata.Interface, gvr schema.GroupVersionResource, kind, namespace string) {
	name := gvr.Resource
	if gvr.Group != "" {
		name += "." + gvr.Group
	}
	res := Resource{Resource: name, Finalized: []Object{}}
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return md.Resource(gvr).Namespace(namespace).List(ctx, opts)
	})
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		res.Count++
		if f := m.GetFinalizers(); len(f) > 0 {
			res.Finalized = append(res.Finalized, Object{Name: m.GetName(), Finalizers: f})
		}
		return nil
	})
	if err != nil {
		r.Unlisted = append(r.Unlisted, Unlisted{What: name, Error: err.Error()})
		return
	}
	if res.Count == 0 {
		return
	}
	r.Remaining = append(r.Remaining, res)
	// One step per finalizer: the objects it holds, and how to let them go.
	byFinalizer := map[string][]string{}
	for _, o := range res.Finalized {
		for _, f := range o.Finalizers {
			byFinalizer[f] = append(byFinalizer[f], o.Name)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(byFinalizer)) {
		names := byFinalizer[f]
		r.Unblock = append(r.Unblock, Step{
			Holds:    fmt.Sprintf("%d %s hold the finalizer %s (%s)", len(names), name, f, strings.Join(first(names, 5), ", ")),
			Unblock:  "the controller that owns " + f + finalizerOwner(f) + " removes it once it has cleaned up: check that it runs and read its logs",
			Commands: releaseCommands(r.Cluster.kubectl(), namespace, name, gvr.GroupVersion().String(), kind, names),
			Warning:  "removing a finalizer skips the cleanup it guards: what its controller would have deleted elsewhere (cloud resources, records in other systems) is left behind",
		})
	}
}

// finalizerOwner names the project a finalizer's prefix points to, when it has one.
func finalizerOwner(finalizer string) string {
	domain, _, ok := strings.Cut(finalizer, "/")
	if !ok || !strings.Contains(domain, ".") {
		return ""
	}
	return " (its prefix names " + domain + ")"
}

func first(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	return append(slices.Clone(names[:n]), fmt.Sprintf("and %d more", len(names)-n))
}

// namespaceFinalizers are steps for the namespace's own finalizers, but
// kubernetes, which the namespace controller removes itself.
func (r *Report) namespaceFinalizers(ns *corev1.Namespace) {
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			continue
		}
		r.Unblock = append(r.Unblock, Step{
			Holds:    "the namespace's own finalizer " + string(f) + " (spec.finalizers)",
			Unblock:  "whoever added " + string(f) + finalizerOwner(string(f)) + " removes it once done",
			Commands: []string{r.Cluster.kubectl() + " get namespace " + shellQuote(ns.Name) + " -o json | jq " + shellQuote(".spec.finalizers -= ["+asciiJSON(string(f))+"]") + " | " + r.Cluster.kubectl() + " replace --raw " + shellQuote("/api/v1/namespaces/"+ns.Name+"/finalize") + " -f -"},
			Warning:  "removing it skips whatever its owner does before the namespace goes",
		})
	}
	for _, f := range ns.Finalizers {
		r.Unblock = append(r.Unblock, Step{
			Holds:    "the namespace's own finalizer " + f + " (metadata.finalizers)",
			Unblock:  "the controller that owns " + f + finalizerOwner(f) + " removes it once done",
			Commands: []string{r.Cluster.kubectl() + " patch namespace " + shellQuote(ns.Name) + " " + unfinalize},
			Warning:  "removing it skips whatever its owner does before the namespace goes",
		})
	}
}

// apiServices records the APIServices that are not available.
func (r *Report) apiServices(ctx context.Context, dyn dynamic.Interface) {
	list, err := dyn.Resource(apiServices).List(ctx, metav1.ListOptions{})
	if err != nil {
		r.Unlisted = append(r.Unlisted, Unlisted{What: "apiservices.apiregistration.k8s.io", Error: err.Error()})
		return
	}
	for _, s := range list.Items {
		var svc struct {
			Spec struct {
				Service *struct {
					Namespace string `json:"namespace"`
					Name      string `json:"name"`
				} `json:"service"`
			} `json:"spec"`
			Status struct {
				Conditions []metav1.Condition `json:"conditions"`
			} `json:"status"`
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(s.Object, &svc); err != nil {
			continue
		}
		available := meta.FindStatusCondition(svc.Status.Conditions, "Available")
		if available != nil && available.Status == metav1.ConditionTrue {
			continue
		}
		a := APIService{Name: s.GetName(), Service: "(none)"}
		if svc.Spec.Service != nil {
			a.Service = svc.Spec.Service.Namespace + "/" + svc.Spec.Service.Name
		}
		if available != nil {
			a.Reason, a.Message = available.Reason, available.Message
		}
		r.UnavailableAPIServices = append(r.UnavailableAPIServices, a)
		r.Unblock = append(r.Unblock, Step{
			Holds:    "the APIService " + a.Name + " is unavailable (" + strings.TrimSpace(a.Reason+": "+a.Message) + "): while discovery fails, no namespace of the cluster finishes deleting",
			Unblock:  "bring back the Service " + a.Service + " and the pods behind it, or, if nothing should serve " + a.Name + " any more, delete the APIService",
			Commands: []string{r.Cluster.kubectl() + " delete apiservice " + shellQuote(a.Name)},
			Warning:  "deleting it removes the API it serves from the cluster until its owner installs it again",
		})
	}
}
