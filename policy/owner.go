package policy

import "fmt"

// Owner is who owns a target namespace, as a sweep read it: the object a
// marker on the namespace names (Argo CD's tracking id, Flux's labels,
// OwnerAnnotation), an Argo CD Application that made it (CreateNamespace),
// or one its record remembers. Package policy only weighs it: reading it is
// internal/owner's and probe's.
type Owner struct {
	// Ref names the owner: <resource>.<group>/<namespace>/<name>, e.g.
	// applications.argoproj.io/argocd/pr-12.
	Ref string
	// By says what named it: the marker's annotation or label key, the
	// Application field that made it, or OwnerRemembered.
	By string
	// Presence is whether it exists, as the sweep read it.
	Presence OwnerPresence
	// Why says, while Presence is OwnerUnknown, why nsman cannot tell: the
	// marker does not parse, the kind is not served or may not be read, a
	// list failed or was cut at its bound.
	Why string
}

// OwnerPresence is whether a namespace's owner exists.
type OwnerPresence int

const (
	// OwnerUnknown: nsman cannot tell (Owner.Why says why); a condition
	// never holds on it.
	OwnerUnknown OwnerPresence = iota
	// OwnerPresent: the owner exists.
	OwnerPresent
	// OwnerGone: the owner does not exist.
	OwnerGone
)

// OwnerRemembered is Owner.By for an owner that no marker names any more
// and the namespace's record remembers.
const OwnerRemembered = "remembered"

// OwnerAnnotation names a namespace's owner for nsman, where no GitOps
// tool's marker does: <resource>.<group>/<namespace>/<name>.
const OwnerAnnotation = "nsman.k8s.consol.de/owner"

// MayRemake says, of a namespace an action removes without deleting its
// owner first, that owner o, which exists, may make it again (Argo CD's
// self-heal, Flux's reconciliation); "" when o is nil or not known to exist.
func (o *Owner) MayRemake(namespace string) string {
	if o == nil || o.Presence != OwnerPresent {
		return ""
	}
	return fmt.Sprintf("namespace %s is owned by %s, which exists and may make it again (DELETE with via: owner deletes the owner first)", namespace, ownerText(o))
}
