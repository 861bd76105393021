// Package complete is nsman's shell completion, as kubectl's: the
// kubeconfig's contexts, clusters and users, namespaces and
// NamespaceManagers read from the cluster, the words of flags with fixed
// choices, files where a flag takes a file and nothing else where it does
// not. What it reads of a cluster is one bounded request with a short
// deadline, and a failure completes nothing, silently: a shell waits on
// it. Package cmd builds the commands and hands them here once built;
// this package reads their flags by name and knows nothing else of them.
package complete
