// Package cluster runs a real Kubernetes control plane on loopback for nsman's
// tests and demo: etcd and kube-apiserver (the API tier), plus
// kube-controller-manager, kube-scheduler and kwok with one simulated node
// (the full tier), so that Jobs complete, Deployments run and namespaces
// finalize as they do in a real cluster.
//
// The binaries come from the user cache, where test/tools/build.sh (make
// control-plane) puts them; the versions are pinned by the go.mod files under
// test/tools. The API server authorizes with RBAC and writes an audit log, so
// tests can prove what a ServiceAccount may do and which requests it made.
//
// A test package shares one control plane through Main in its TestMain and
// isolates its tests by namespace (Cluster.Namespace). Every process the
// package starts is stopped on success, failure, panic and interrupt.
package cluster
