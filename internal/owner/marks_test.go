package owner

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nsman/nsman/policy"
)

// marks are the marks of namespace pr-12, Argo CD's namespace argocd.
func marks(labels, annotations map[string]string) Marks {
	return Marks{Namespace: "pr-12", ArgoCDNamespace: "argocd", Annotations: annotations,
		Label: func(k string) (string, bool) { v, ok := labels[k]; return v, ok }}
}

func TestMarksNameTheOwner(t *testing.T) {
	const (
		kName, kNamespace = "kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace"
		hName, hNamespace = "helm.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/namespace"
	)
	long := strings.Repeat("a", MaxMarker+1)
	for _, tc := range []struct {
		name                string
		labels, annotations map[string]string
		// ref and by are the owner named; why, a part of the reason none
		// is, with by the marker that does not parse.
		ref, by, why string
	}{
		{name: "no marker"},
		{name: "other labels and annotations", labels: map[string]string{"app": "x"}, annotations: map[string]string{"other": "y"}},
		{name: "nsman's annotation", annotations: map[string]string{policy.OwnerAnnotation: "applications.argoproj.io/argocd/pr-12"},
			ref: "applications.argoproj.io/argocd/pr-12", by: policy.OwnerAnnotation},
		{name: "nsman's annotation naming any kind", annotations: map[string]string{policy.OwnerAnnotation: "widgets.example.com/team/w1"},
			ref: "widgets.example.com/team/w1", by: policy.OwnerAnnotation},
		{name: "nsman's annotation naming a core kind", annotations: map[string]string{policy.OwnerAnnotation: "configmaps/team/owner"},
			ref: "configmaps/team/owner", by: policy.OwnerAnnotation},
		{name: "nsman's annotation with two parts", annotations: map[string]string{policy.OwnerAnnotation: "applications.argoproj.io/pr-12"},
			by: policy.OwnerAnnotation, why: "is not <resource>.<group>/<namespace>/<name>"},
		{name: "nsman's annotation with four parts", annotations: map[string]string{policy.OwnerAnnotation: "applications.argoproj.io/argocd/pr-12/x"},
			by: policy.OwnerAnnotation, why: "is not <resource>.<group>/<namespace>/<name>"},
		{name: "nsman's annotation, empty", annotations: map[string]string{policy.OwnerAnnotation: ""},
			by: policy.OwnerAnnotation, why: "is not <resource>.<group>/<namespace>/<name>"},
		{name: "nsman's annotation, a bad namespace", annotations: map[string]string{policy.OwnerAnnotation: "applications.argoproj.io/Argo_CD/pr-12"},
			by: policy.OwnerAnnotation, why: `namespace "Argo_CD"`},
		{name: "nsman's annotation, no name", annotations: map[string]string{policy.OwnerAnnotation: "applications.argoproj.io/argocd/"},
			by: policy.OwnerAnnotation, why: `name ""`},
		{name: "nsman's annotation, a bad resource", annotations: map[string]string{policy.OwnerAnnotation: "Apps.argoproj.io/argocd/pr-12"},
			by: policy.OwnerAnnotation, why: `resource "Apps"`},
		{name: "nsman's annotation, a bad group", annotations: map[string]string{policy.OwnerAnnotation: "applications.argo..io/argocd/pr-12"},
			by: policy.OwnerAnnotation, why: `group "argo..io"`},
		{name: "nsman's annotation, too long", annotations: map[string]string{policy.OwnerAnnotation: long},
			by: policy.OwnerAnnotation, why: "longer than 1024 bytes"},
		{name: "a tracking id", annotations: map[string]string{trackingID: "pr-12:/Namespace:pr-12/pr-12"},
			ref: "applications.argoproj.io/argocd/pr-12", by: trackingID},
		{name: "a tracking id, the destination namespace another", annotations: map[string]string{trackingID: "preview:/Namespace:apps/pr-12"},
			ref: "applications.argoproj.io/argocd/preview", by: trackingID},
		{name: "a tracking id, no destination namespace", annotations: map[string]string{trackingID: "preview:/Namespace:/pr-12"},
			ref: "applications.argoproj.io/argocd/preview", by: trackingID},
		{name: "a tracking id of an Application in another namespace", annotations: map[string]string{trackingID: "team-a_pr-12:/Namespace:pr-12/pr-12"},
			ref: "applications.argoproj.io/team-a/pr-12", by: trackingID},
		{name: "a tracking id, a bad app namespace", annotations: map[string]string{trackingID: "Team_pr-12:/Namespace:pr-12/pr-12"},
			by: trackingID, why: `namespace "Team"`},
		{name: "a tracking id, two underscores", annotations: map[string]string{trackingID: "team_pr_12:/Namespace:pr-12/pr-12"},
			by: trackingID, why: `name "pr_12"`},
		{name: "a tracking id, no app", annotations: map[string]string{trackingID: ":/Namespace:pr-12/pr-12"},
			by: trackingID, why: `name ""`},
		{name: "a tracking id of one part", annotations: map[string]string{trackingID: "pr-12"},
			by: trackingID, why: "does not parse: want <app>:<group>/<kind>:<namespace>/<name>"},
		{name: "a tracking id of two parts", annotations: map[string]string{trackingID: "pr-12:/Namespace"},
			by: trackingID, why: "does not parse"},
		{name: "a tracking id, the kind without its group", annotations: map[string]string{trackingID: "pr-12:Namespace:pr-12/pr-12"},
			by: trackingID, why: "does not parse"},
		{name: "a tracking id, the name without its namespace", annotations: map[string]string{trackingID: "pr-12:/Namespace:pr-12"},
			by: trackingID, why: "does not parse"},
		{name: "a tracking id, too long", annotations: map[string]string{trackingID: long},
			by: trackingID, why: "longer than 1024 bytes"},
		{name: "a tracking id naming another namespace", annotations: map[string]string{trackingID: "pr-13:/Namespace:pr-13/pr-13"},
			by: trackingID, why: "names /Namespace pr-13, not this namespace"},
		{name: "a tracking id naming a Deployment", annotations: map[string]string{trackingID: "pr-12:apps/Deployment:pr-12/pr-12"},
			by: trackingID, why: "names apps/Deployment pr-12, not this namespace"},
		{name: "a tracking id whose name holds a colon, another object", annotations: map[string]string{trackingID: "pr-12:/Namespace:pr-12/pr-12:x"},
			by: trackingID, why: "not this namespace"},
		{name: "a tracking id naming another object, then Flux's labels", labels: map[string]string{kName: "pr-12", kNamespace: "flux-system"},
			annotations: map[string]string{trackingID: "pr-13:/Namespace:pr-13/pr-13"},
			ref:         "kustomizations.kustomize.toolkit.fluxcd.io/flux-system/pr-12", by: kName},
		{name: "a Kustomization's labels", labels: map[string]string{kName: "pr-12", kNamespace: "flux-system"},
			ref: "kustomizations.kustomize.toolkit.fluxcd.io/flux-system/pr-12", by: kName},
		{name: "a Kustomization's name label alone", labels: map[string]string{kName: "pr-12"},
			by: kName, why: "label kustomize.toolkit.fluxcd.io/name without kustomize.toolkit.fluxcd.io/namespace"},
		{name: "a Kustomization's namespace label alone", labels: map[string]string{kNamespace: "flux-system"},
			by: kName, why: "label kustomize.toolkit.fluxcd.io/namespace without kustomize.toolkit.fluxcd.io/name"},
		{name: "a Kustomization's labels, an empty name", labels: map[string]string{kName: "", kNamespace: "flux-system"},
			by: kName, why: "do not parse"},
		{name: "a HelmRelease's labels", labels: map[string]string{hName: "pr-12", hNamespace: "flux-system"},
			ref: "helmreleases.helm.toolkit.fluxcd.io/flux-system/pr-12", by: hName},
		{name: "a HelmRelease's labels, a bad namespace", labels: map[string]string{hName: "pr-12", hNamespace: "flux.system"},
			by: hName, why: `namespace "flux.system"`},
		{name: "nsman's annotation before a tracking id", annotations: map[string]string{policy.OwnerAnnotation: "widgets.example.com/team/w1", trackingID: "pr-12:/Namespace:pr-12/pr-12"},
			ref: "widgets.example.com/team/w1", by: policy.OwnerAnnotation},
		{name: "nsman's annotation that does not parse before a tracking id", annotations: map[string]string{policy.OwnerAnnotation: "w1", trackingID: "pr-12:/Namespace:pr-12/pr-12"},
			by: policy.OwnerAnnotation, why: "does not parse"},
		{name: "a tracking id before Flux's labels", labels: map[string]string{kName: "pr-12", kNamespace: "flux-system", hName: "pr-12", hNamespace: "flux-system"},
			annotations: map[string]string{trackingID: "pr-12:/Namespace:pr-12/pr-12"},
			ref:         "applications.argoproj.io/argocd/pr-12", by: trackingID},
		{name: "a tracking id that does not parse before Flux's labels", labels: map[string]string{kName: "pr-12", kNamespace: "flux-system"},
			annotations: map[string]string{trackingID: "pr-12"}, by: trackingID, why: "does not parse"},
		{name: "a Kustomization before a HelmRelease", labels: map[string]string{kName: "k", kNamespace: "flux-system", hName: "h", hNamespace: "flux-system"},
			ref: "kustomizations.kustomize.toolkit.fluxcd.io/flux-system/k", by: kName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := marks(tc.labels, tc.annotations).Owner()
			if got.Names() != (tc.ref != "") || got.By != tc.by || (tc.ref != "" && got.Ref.String() != tc.ref) {
				t.Fatalf("named %+v (%s), want %q by %q", got, got.Ref, tc.ref, tc.by)
			}
			if tc.ref != "" && got.Why != "" || tc.ref == "" && !strings.Contains(got.Why, tc.why) || tc.why == "" && got.Why != "" {
				t.Errorf("why %q, want one holding %q", got.Why, tc.why)
			}
		})
	}
}

// A ref parses back from how it is spelled.
func TestRefRoundTrips(t *testing.T) {
	for _, s := range []string{"applications.argoproj.io/argocd/pr-12", "configmaps/team/owner", "helmreleases.helm.toolkit.fluxcd.io/flux-system/a.b"} {
		r, err := ParseRef(s)
		if err != nil || r.String() != s {
			t.Errorf("%q parsed as %q (%v)", s, r, err)
		}
	}
}

func TestApplicationCreates(t *testing.T) {
	app := func(mutate func(*Item)) *Item {
		it := &Item{}
		it.Spec.Destination.Namespace, it.Spec.Destination.Server = "pr-12", inClusterServer
		it.Spec.SyncPolicy.SyncOptions = []string{"ServerSideApply=true", "CreateNamespace=true"}
		mutate(it)
		return it
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Item)
		want   string
	}{
		{"CreateNamespace, this cluster by server", func(*Item) {}, "pr-12"},
		{"CreateNamespace, this cluster by name", func(it *Item) { it.Spec.Destination.Server, it.Spec.Destination.Name = "", "in-cluster" }, "pr-12"},
		{"no CreateNamespace", func(it *Item) { it.Spec.SyncPolicy.SyncOptions = []string{"ServerSideApply=true"} }, ""},
		{"CreateNamespace=false", func(it *Item) { it.Spec.SyncPolicy.SyncOptions = []string{"CreateNamespace=false"} }, ""},
		{"no sync options", func(it *Item) { it.Spec.SyncPolicy.SyncOptions = nil }, ""},
		{"another cluster", func(it *Item) { it.Spec.Destination.Server = "https://prod.example.com" }, ""},
		{"another cluster by name", func(it *Item) { it.Spec.Destination.Server, it.Spec.Destination.Name = "", "prod" }, ""},
		{"another cluster's server, named in-cluster", func(it *Item) {
			it.Spec.Destination.Server, it.Spec.Destination.Name = "https://prod.example.com", "in-cluster"
		}, ""},
		{"no destination namespace", func(it *Item) { it.Spec.Destination.Namespace = "" }, ""},
		{"a destination that is no namespace's name", func(it *Item) { it.Spec.Destination.Namespace = strings.Repeat("x", 64) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := application.Creates(app(tc.mutate)); got != tc.want {
				t.Errorf("creates %q, want %q", got, tc.want)
			}
			if got := kustomization.Creates(app(tc.mutate)); got != "" {
				t.Errorf("a Kustomization creates %q", got)
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	for _, k := range Kinds() {
		if got, ok := KindOf(k.Resource.GroupResource()); !ok || got.Name != k.Name {
			t.Errorf("KindOf(%s) = %v, %v", k.Ref(), got.Name, ok)
		}
	}
	if k, ok := KindOf(applications.GroupResource()); !ok || k.Ref() != "applications.argoproj.io" {
		t.Errorf("KindOf(applications) = %v", k.Ref())
	}
	if k, ok := KindOf(schema.GroupResource{Group: "example.com", Resource: "widgets"}); ok {
		t.Errorf("KindOf(widgets.example.com) = %v, a kind not registered", k.Name)
	}
}

// FuzzMarksOwner: whatever a namespace carries, reading its owner never
// panics, names an owner only with a ref that parses back to itself and no
// reason, gives a reason with the marker's key whenever it names none while
// one is there, and says nothing when none is.
func FuzzMarksOwner(f *testing.F) {
	f.Add("pr-12", "", "pr-12:/Namespace:pr-12/pr-12", "", "")
	f.Add("pr-12", "applications.argoproj.io/argocd/pr-12", "", "", "")
	f.Add("pr-12", "", "team_pr-12:/Namespace:x/pr-12", "", "")
	f.Add("pr-12", "", "", "k", "flux-system")
	f.Add("pr-12", "", "", "", "flux-system")
	f.Add("pr-12", "a/b", "a:b:c", "K", "")
	f.Fuzz(func(t *testing.T, ns, annotation, tracking, fluxName, fluxNamespace string) {
		annotations, labels := map[string]string{}, map[string]string{}
		if annotation != "" {
			annotations[policy.OwnerAnnotation] = annotation
		}
		if tracking != "" {
			annotations[trackingID] = tracking
		}
		if fluxName != "" {
			labels["kustomize.toolkit.fluxcd.io/name"] = fluxName
		}
		if fluxNamespace != "" {
			labels["kustomize.toolkit.fluxcd.io/namespace"] = fluxNamespace
		}
		m := marks(labels, annotations)
		m.Namespace = ns
		got := m.Owner()
		switch {
		case got.Names():
			back, err := ParseRef(got.Ref.String())
			if err != nil || back != got.Ref || got.Why != "" || got.By == "" {
				t.Fatalf("named %+v: parsed back as %+v (%v)", got, back, err)
			}
		case len(annotations)+len(labels) > 0:
			if got.Why == "" || got.By == "" {
				t.Fatalf("markers %q %q named none and said no why: %+v", annotations, labels, got)
			}
		case got != (Named{}):
			t.Fatalf("no marker, and named %+v", got)
		}
	})
}

// An owner deploys to a namespace, for a DELETE via owner, only as its own
// spec says (an Application's destination, a Flux object's targetNamespace)
// or by the Flux labels the namespace carries naming that very object: a
// marker alone never makes an object deploy there.
func TestDeploysTo(t *testing.T) {
	item := func(ns, name, dest, target string) *Item {
		it := &Item{}
		it.Metadata.Namespace, it.Metadata.Name = ns, name
		it.Spec.Destination.Namespace, it.Spec.TargetNamespace = dest, target
		return it
	}
	ks := map[string]string{"kustomize.toolkit.fluxcd.io/name": "pr-12", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
	for _, tc := range []struct {
		name string
		kind Kind
		it   *Item
		m    Marks
		want bool
	}{
		{"Application to it", application, item("argocd", "pr-12", "pr-12", ""), marks(nil, nil), true},
		{"Application elsewhere", application, item("argocd", "pr-12", "team-b", ""), marks(nil, nil), false},
		{"Application whose targetNamespace names it", application, item("argocd", "pr-12", "", "pr-12"), marks(nil, nil), false},
		{"Kustomization targeting it", kustomization, item("flux-system", "pr-12", "", "pr-12"), marks(nil, nil), true},
		{"Kustomization whose labels it carries", kustomization, item("flux-system", "pr-12", "", ""), marks(ks, nil), true},
		{"another Kustomization than its labels name", kustomization, item("flux-system", "pr-13", "", ""), marks(ks, nil), false},
		{"HelmRelease with a Kustomization's labels", helmRelease, item("flux-system", "pr-12", "", ""), marks(ks, nil), false},
		{"HelmRelease targeting it", helmRelease, item("flux-system", "pr-12", "", "pr-12"), marks(nil, nil), true},
	} {
		if got := tc.kind.DeploysTo(tc.it, tc.m); got != tc.want {
			t.Errorf("%s: DeploysTo %t, want %t", tc.name, got, tc.want)
		}
	}
}
