// Package connect is how nsman reaches a cluster, as kubectl does: a
// kubeconfig (--kubeconfig, else $KUBECONFIG, else ~/.kube/config) or the
// in-cluster config, with kubectl's connection flags over it (--server,
// --token, --as, --request-timeout, ...), bound as kubectl binds them
// (client-go's clientcmd). It links the client-go auth plugins kubectl
// links. The commands of package cmd bind its flags and build their
// clients from the configuration it returns; it knows nothing of them.
package connect
