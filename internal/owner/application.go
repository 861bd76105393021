package owner

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// application is Argo CD's Application: a namespace names one by its
// tracking id, and one with CreateNamespace=true owns the namespace it
// creates.
var application = Kind{Name: "Application", Resource: applications,
	Why:    "OWNER_GONE: an Argo CD Application that owns a namespace (its tracking id, or CreateNamespace)",
	marker: trackedBy, creates: createdBy, deploysTo: destinedFor}

// destinedFor reports whether Application it deploys to the namespace m
// marks: its spec.destination.namespace.
func destinedFor(it *Item, m Marks) bool { return it.Spec.Destination.Namespace == m.Namespace }

// applications is where Applications are served.
var applications = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// trackingID is the annotation Argo CD's annotation tracking (its default)
// writes on what an Application syncs:
// <app>:<group>/<kind>:<namespace>/<name>, the app name <ns>_<name> for
// an Application outside Argo CD's own namespace.
const trackingID = "argocd.argoproj.io/tracking-id"

// trackingOf splits tracking id v as Argo CD's own parsing does: three
// parts at the first two colons (a name may hold one), each of the last two
// in two at its one slash. It returns the app name and the object's group,
// kind and name; the object's namespace is not read: for a cluster-scoped
// object such as a Namespace Argo CD writes the Application's destination
// namespace there.
func trackingOf(v string) (app, group, kind, name string, ok bool) {
	app, rest, ok1 := strings.Cut(v, ":")
	gk, obj, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || strings.Count(gk, "/") != 1 || strings.Count(obj, "/") != 1 {
		return "", "", "", "", false
	}
	group, kind, _ = strings.Cut(gk, "/")
	_, name, _ = strings.Cut(obj, "/")
	return app, group, kind, name, true
}

// trackedBy is the Application m's tracking id names: its object part
// must name this namespace (group "", kind Namespace, its name).
func trackedBy(m Marks) (Named, bool) {
	v, ok := m.Annotations[trackingID]
	if !ok {
		return Named{}, false
	}
	if len(v) > MaxMarker {
		return Named{By: trackingID, Why: fmt.Sprintf("%s is longer than %d bytes", trackingID, MaxMarker)}, true
	}
	app, group, kind, name, ok := trackingOf(v)
	if !ok {
		return Named{By: trackingID, Why: fmt.Sprintf("%s %q does not parse: want <app>:<group>/<kind>:<namespace>/<name>", trackingID, v)}, true
	}
	if group != "" || kind != "Namespace" || name != m.Namespace {
		return Named{By: trackingID, Why: fmt.Sprintf("%s %q names %s/%s %s, not this namespace", trackingID, v, group, kind, name)}, false
	}
	ref := Ref{Resource: applications.GroupResource(), Namespace: m.ArgoCDNamespace, Name: app}
	// Argo CD qualifies the app name of an Application outside its own
	// namespace as <ns>_<name>; neither part can hold an underscore.
	if ns, n, qualified := strings.Cut(app, "_"); qualified {
		ref.Namespace, ref.Name = ns, n
	}
	if err := ref.valid(); err != nil {
		return Named{By: trackingID, Why: fmt.Sprintf("%s %q does not parse: %v", trackingID, v, err)}, true
	}
	return Named{Ref: ref, By: trackingID}, true
}

// CreatedBy is policy.Owner.By for an Application that made the namespace
// (CreateNamespace), no marker naming it.
const CreatedBy = "spec.syncPolicy.syncOptions CreateNamespace=true"

// inClusterServer and inClusterName are how an Application's destination
// names the cluster Argo CD runs in (its default cluster).
const (
	inClusterServer = "https://kubernetes.default.svc"
	inClusterName   = "in-cluster"
)

// createdBy is the namespace Application it creates in this cluster: its
// spec.destination.namespace, when its sync options hold CreateNamespace=true
// and its destination is this cluster (by server, or by name with no
// server), "" else or when the destination is no namespace's name.
func createdBy(it *Item) string {
	d := it.Spec.Destination
	if !slices.Contains(it.Spec.SyncPolicy.SyncOptions, "CreateNamespace=true") {
		return ""
	}
	if d.Server != inClusterServer && (d.Server != "" || d.Name != inClusterName) {
		return ""
	}
	if len(validation.IsDNS1123Label(d.Namespace)) > 0 {
		return ""
	}
	return d.Namespace
}
