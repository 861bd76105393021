// Package decide is what a sweep decides, writing nothing: an Evaluator
// reads a manager, or one namespace a rule matches, and returns a Decision
// (final, or a Plan for the executor). It judges claims left by earlier
// sweeps, the tenancy guards, the managers that shield a namespace from
// rules (Governors), holds (nsman.k8s.consol.de/hold-until), freezes
// (--freeze), terminating targets and a WEBHOOK's backoff. What it reads
// of the cluster comes through the interfaces it declares (the
// namespaces, pods checks, activity, stuck namespaces, the action budget),
// so that its logic is tested without one (docs/design.md says where each
// part of a sweep lives).
package decide
