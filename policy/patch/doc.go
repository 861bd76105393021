// Package patch is the patches of a sleep (params.patches of SLEEP and
// SCALE_DOWN): a JSON merge patch (RFC 7396) applied to the objects of one
// custom resource's kind while the target sleeps, such as a Flux
// HelmRelease's spec.suspend: true, and undone at the wake. It parses and
// bounds them, refusing what nsman must not write (an object's identity,
// its status, nsman's own records, Kubernetes' own APIs), says whether an
// object already is what a patch makes of it (Applied), and computes the
// patch that brings it back (Inverse), which the executor records on the
// object. It makes no request and imports nothing of nsman.
package patch
