#!/usr/bin/env bash
# make demo: start a local full control plane, run a Job in a namespace, watch
# its pods succeed, delete the namespace and watch it go, then tear down.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v kubectl >/dev/null || { echo "demo: kubectl is needed on PATH" >&2; exit 2; }

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

step "nsman"
bin/nsman version

step "starting a local control plane (etcd, kube-apiserver, controller manager, scheduler, kwok)"
export KUBECONFIG
KUBECONFIG=$(make --no-print-directory cluster-up | tail -n 1 | sed 's/^KUBECONFIG=//')
trap 'step "tearing down"; make --no-print-directory cluster-down' EXIT
kubectl get nodes -o wide

ns=demo-e2e-run
step "creating namespace $ns with a test Job of 3 pods"
kubectl apply -f - <<YAML
apiVersion: v1
kind: Namespace
metadata:
  name: $ns
---
apiVersion: batch/v1
kind: Job
metadata:
  name: e2e-tests
  namespace: $ns
spec:
  completions: 3
  parallelism: 2
  backoffLimit: 0
  template:
    metadata:
      labels:
        component: main
        type: test
    spec:
      restartPolicy: Never
      containers:
        - name: tests
          image: registry.example/e2e-tests:1.0
YAML

step "waiting for the Job to complete"
kubectl -n "$ns" wait --for=condition=complete job/e2e-tests --timeout=120s
kubectl -n "$ns" get job,pods -o wide

step "deleting namespace $ns"
start=$SECONDS
kubectl delete namespace "$ns" --wait=true --timeout=120s
kubectl get namespace "$ns" 2>&1 || true
echo "namespace $ns gone after $((SECONDS - start))s"
