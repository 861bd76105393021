// Package sweep is nsman's I/O: one sweep lists the NamespaceManagers, asks
// package policy what each one (and each namespace of a rule) should do,
// and carries the decisions out through one executor that owns the action
// cap, claims, records and Events; a dry run differs in its writer alone.
// Clients and the clock are injected; nothing here builds a client or reads
// flags.
package sweep
