// Package sweep is nsman's I/O: one sweep lists the NamespaceManagers, asks
// package policy what each one should do, and applies the actions through a
// single executor that owns dry-run, the action cap, claims and reporting.
// Clients and the clock are injected; nothing here builds a client or reads
// flags.
package sweep
