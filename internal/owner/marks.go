package owner

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nsman/nsman/policy"
)

// MaxMarker bounds the value of an owner annotation a sweep reads (see
// Annotations): a valid one is some 400 bytes at most; a longer one is cut
// at MaxMarker+1 bytes where it is read, and does not parse.
const MaxMarker = 1024

// Annotations are the namespace annotations the markers read, which a
// sweep keeps of every namespace (cut at MaxMarker+1 bytes):
// policy.OwnerAnnotation, and Argo CD's tracking id.
func Annotations() []string { return []string{policy.OwnerAnnotation, trackingID} }

// Ref is an owner, as policy.Owner.Ref spells it:
// <resource>.<group>/<namespace>/<name>.
type Ref struct {
	Resource        schema.GroupResource
	Namespace, Name string
}

func (r Ref) String() string { return r.Resource.String() + "/" + r.Namespace + "/" + r.Name }

// ParseRef reads s as <resource>.<group>/<namespace>/<name> (<resource>
// alone for the core group), each part a valid name of its place.
func ParseRef(s string) (Ref, error) {
	if len(s) > MaxMarker {
		return Ref{}, fmt.Errorf("%q... is longer than %d bytes", s[:64], MaxMarker)
	}
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return Ref{}, fmt.Errorf("%q is not <resource>.<group>/<namespace>/<name>", s)
	}
	r := Ref{Resource: schema.ParseGroupResource(parts[0]), Namespace: parts[1], Name: parts[2]}
	if err := r.valid(); err != nil {
		return Ref{}, fmt.Errorf("%q: %w", s, err)
	}
	return r, nil
}

// valid checks each part of r against what the API server allows there.
func (r Ref) valid() error {
	check := func(what, v string, errs []string) error {
		if len(errs) > 0 {
			return fmt.Errorf("%s %q: %s", what, v, errs[0])
		}
		return nil
	}
	if err := check("resource", r.Resource.Resource, validation.IsDNS1123Label(r.Resource.Resource)); err != nil {
		return err
	}
	if r.Resource.Group != "" {
		if err := check("group", r.Resource.Group, validation.IsDNS1123Subdomain(r.Resource.Group)); err != nil {
			return err
		}
	}
	if err := check("namespace", r.Namespace, validation.IsDNS1123Label(r.Namespace)); err != nil {
		return err
	}
	return check("name", r.Name, validation.IsDNS1123Subdomain(r.Name))
}

// Named is the owner a namespace's markers name: Ref and By (the marker's
// key) when one does; By and Why when a marker is there but names no owner
// of the namespace (it does not parse, or names another object); all empty
// when none is there.
type Named struct {
	Ref Ref
	By  string
	Why string
}

// Names reports whether n names an owner.
func (n Named) Names() bool { return n.Ref != (Ref{}) }

// Marks are what a namespace carries that may name its owner.
type Marks struct {
	// Namespace is the namespace's name.
	Namespace string
	// Label is the value of one of its labels, and whether it has it.
	Label func(key string) (string, bool)
	// Annotations are its annotations that Annotations names.
	Annotations map[string]string
	// ArgoCDNamespace is where an Argo CD Application named by an app name
	// without a namespace lives (--argocd-namespace).
	ArgoCDNamespace string
}

// Owner is the owner m names, read in this precedence: nsman's
// policy.OwnerAnnotation, then each kind's marker in the kinds' order (Argo
// CD's tracking id, Flux's Kustomization labels, then HelmRelease labels).
// The first marker there decides, even when it does not parse (Named.Why):
// nsman cannot tell whom it meant. A tracking id that names another object
// is not this namespace's marker (Argo CD wrote it on what it was copied
// from): the markers after it are read, and when none is there, Why says
// what it names.
func (m Marks) Owner() Named {
	if v, ok := m.Annotations[policy.OwnerAnnotation]; ok {
		r, err := ParseRef(v)
		if err != nil {
			return Named{By: policy.OwnerAnnotation, Why: fmt.Sprintf("%s does not parse: %v", policy.OwnerAnnotation, err)}
		}
		return Named{Ref: r, By: policy.OwnerAnnotation}
	}
	var aside Named
	for _, k := range known {
		if k.marker == nil {
			continue
		}
		named, present := k.marker(m)
		if present {
			return named
		}
		if aside.Why == "" {
			aside = named
		}
	}
	return aside
}

// Item is one owner object as a sweep's list decodes it: its metadata
// and the few fields of its spec a kind's home reads (Application's
// destination and sync options); the rest is read past.
type Item struct {
	Metadata struct {
		Name              string       `json:"name"`
		Namespace         string       `json:"namespace"`
		UID               types.UID    `json:"uid"`
		DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec struct {
		Destination struct {
			Namespace string `json:"namespace"`
			Server    string `json:"server"`
			Name      string `json:"name"`
		} `json:"destination"`
		SyncPolicy struct {
			SyncOptions []string `json:"syncOptions"`
		} `json:"syncPolicy"`
		// TargetNamespace is where a Flux Kustomization or HelmRelease
		// deploys, read by a DELETE via owner alone.
		TargetNamespace string `json:"targetNamespace"`
	} `json:"spec"`
}
