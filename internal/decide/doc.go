// Package decide holds what a sweep decides without writing anything: the
// freezes of --freeze, and what holds (nsman.k8s.consol.de/hold-until)
// amount to at a time. The evaluation of managers and of a rule's
// namespaces, and claims, are still package sweep's (docs/design.md says
// where each part of a sweep lives).
package decide
