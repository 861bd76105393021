// Package decide holds what a sweep decides without writing anything. It
// holds the freezes of --freeze; the evaluation of managers and of a rule's
// namespaces, claims and holds are still package sweep's (docs/design.md
// says where each part of a sweep lives).
package decide
