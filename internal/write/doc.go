// Package write is the only package of the sweep that sends a mutating
// request: the Writer patches managers, namespaces and workloads, deletes
// namespaces, writes Events and delivers webhooks; in a dry run it sends
// nothing and everything else behaves alike. The patches it sends are
// built here too (Patch, JSONPatch), and so are the conditions writes are
// made on: at the version listed, read again on a conflict (AsListed),
// transient failures retried within a record's timeout (Retry).
package write
