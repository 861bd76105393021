// Package record keeps what nsman remembers of a subject between sweeps,
// so that an action is taken once: a manager's status (the status
// subresource, or the nsman.k8s.consol.de/status annotation under the
// original CRD) and a rule's record of one namespace (an annotation on the
// namespace). Each is made from what the sweep listed; a write that
// follows no claim of this sweep's is conditional on the version listed,
// and a subject changed since is left to the next sweep.
package record
