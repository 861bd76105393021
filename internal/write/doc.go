// Package write is the only package of the sweep that sends a mutating
// request: the Writer patches managers, namespaces and workloads, deletes
// namespaces, writes Events and delivers webhooks; in a dry run it sends
// nothing and everything else behaves alike. The patches it sends are
// built here too (Patch, JSONPatch).
package write
