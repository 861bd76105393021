// Package sweep runs one sweep: it lists the NamespaceManagers, asks
// package policy what each one (and each namespace of a rule) should do,
// and carries the decisions out through one executor that owns the action
// cap, claims, records and Events; a dry run differs in its writer alone
// (internal/write). It orchestrates the packages of internal/: reads come
// from internal/cluster, writes go through internal/write, Events and
// notifications through internal/tell, and what it writes and says is
// internal/status's and report's. Clients and the clock are injected;
// nothing here builds a client or reads flags.
package sweep
