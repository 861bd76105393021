// Package cluster is how a sweep reads the cluster: the clients it is
// given, NamespaceManagers in pages (which package listpage decodes no
// further than a sweep reads), namespaces as metadata with their labels
// and nsman's annotations, lists streamed one object at a time, an object
// again by name, the shard a manager belongs to, the server's clock, and
// the permissions all this needs. Every list is paged; a tenant's objects
// are decoded into the fields read, so that a page costs its largest
// object, not all of them.
package cluster
