#!/usr/bin/env bash
# make demo: start a local control plane, install nsman's CRD and RBAC, apply
# examples/, show the dry-run plan and what it would reclaim, run a real
# sweep, show what happened, play more scenes (stages, a tenant's webhook, a
# rule, a laptop dry run, nsman doctor, a namespace stuck in Terminating,
# expiry dates, idle previews, GitOps previews, windows, sleep and wake,
# idle from traffic, a warning whose link extends a namespace, freezes), then
# tear down.
set -euo pipefail
cd "$(dirname "$0")/.."

# The kubectl that make control-plane built, of the control plane's own
# release, comes first on PATH.
kube_version=$(cd test/tools/kube && go list -m -f '{{.Version}}' k8s.io/kubernetes)
kube_bin="${XDG_CACHE_HOME:-$HOME/.cache}/nsman/kubernetes-$kube_version"
[ -x "$kube_bin/kubectl" ] || { echo "demo: no $kube_bin/kubectl: run 'make control-plane'" >&2; exit 2; }
export PATH="$kube_bin:$PATH"

# Argo CD's Application CRD, as make control-plane fetched it at the version
# test/tools/gitops pins (test/tools/gitops/crds names the file).
# gitops_crd is the CRD file of module $1 that make control-plane copied
# from its release tree (test/tools/gitops/crds).
gitops_crd() {
	local module prefix file version
	read -r module prefix file < <(grep "^$1 " test/tools/gitops/crds)
	version=$(cd test/tools/gitops && go list -m -f '{{.Version}}' "$module")
	echo "${XDG_CACHE_HOME:-$HOME/.cache}/nsman/$prefix-$version/$(basename "$file")"
}
application_crd=$(gitops_crd github.com/argoproj/argo-cd/v3)
helmrelease_crd=$(gitops_crd github.com/fluxcd/helm-controller)
for crd in "$application_crd" "$helmrelease_crd"; do
	[ -s "$crd" ] || { echo "demo: no $crd: run 'make control-plane'" >&2; exit 2; }
done

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
# nsman sweeps from here, outside a pod: it does not know the namespace it
# would run in, so it trusts none unless told. Each sweep of the demo trusts
# namespace-manager, where deploy/ installs nsman and the examples keep the
# managers of other namespaces and the rules, as deploy/'s CronJob does.
nsman() { bin/nsman "$@" --trusted-namespaces namespace-manager --log-level warn; }
# established waits until CRD $1 is served: kubectl wait fails at once on a
# CRD whose status has no conditions yet, as one just created may.
established() {
	for _ in $(seq 60); do
		[ "$(kubectl get crd "$1" -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" = True ] && return 0
		sleep 0.5
	done
	echo "CRD $1 not established within 30 s" >&2
	return 1
}

step "nsman"
bin/nsman version

step "starting a local control plane (etcd, kube-apiserver, controller manager, scheduler, kwok)"
export KUBECONFIG
KUBECONFIG=$(make --no-print-directory cluster-up | tail -n 1 | sed 's/^KUBECONFIG=//')
work=$(mktemp -d)
receiver_pid=
traffic_pid=
serve_pid=
cleanup() {
	step "tearing down"
	if [ -n "$receiver_pid" ]; then kill "$receiver_pid" 2>/dev/null || true; fi
	if [ -n "$traffic_pid" ]; then kill "$traffic_pid" 2>/dev/null || true; fi
	if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; fi
	make --no-print-directory cluster-down
	rm -rf "$work"
}
trap cleanup EXIT
kubectl get nodes

step "installing nsman's CRD and RBAC from deploy/base (the CronJob is left out: this demo runs nsman from here, trusting namespace-manager as deploy/'s CronJob does)"
kubectl apply -f deploy/base/namespace.yaml -f deploy/base/crd.yaml -f deploy/base/rbac.yaml

step "starting a webhook receiver on loopback"
go build -o bin/webhook-receiver ./test/webhook-receiver
bin/webhook-receiver >"$work/webhooks.log" 2>&1 &
receiver_pid=$!
until [ -s "$work/webhooks.log" ]; do sleep 0.1; done
receiver=$(head -n 1 "$work/webhooks.log")
echo "receiver at $receiver"

step "applying examples/ (the webhook example pointed at the receiver; stages, rules, expiry dates, idle and GitOps previews, windows, sleeps and warnings get scenes of their own below)"
for f in examples/*.yaml; do
	case "$f" in examples/rule-* | examples/lifecycle-stages.yaml | examples/windows-* | examples/idle-* | examples/owner-gone-* | examples/sleep-* | examples/warn-*) continue ;; esac
	sed "s#http://webhook-receiver\.[a-z0-9-]*\.svc:8080#$receiver#" "$f"
	echo "---"
done | kubectl apply -f -

step "something to reclaim (examples/ request nothing): CPU and memory requests on demo-ttl's pods, a 5Gi claim in demo-trusted"
kubectl -n demo-ttl set resources deployment preview-web --requests=cpu=250m,memory=128Mi
kubectl -n demo-trusted apply -f - <<'YAML'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: uploads}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 5Gi}}}
YAML

step "nsman sweep --dry-run: nothing is due yet"
nsman sweep --dry-run

step "nsman sweep --dry-run --at <in 3 minutes>: what will happen"
nsman sweep --dry-run --at "$(date -u -d '+3 min' +%Y-%m-%dT%H:%M:%SZ)"

step "waiting until every manager is due (tests finish, TTLs elapse; about a minute)"
start=$SECONDS
# grep reads the whole report (not -q): a grep that quits at its first match
# could end nsman with SIGPIPE, which pipefail takes for "none waiting".
while nsman sweep --dry-run -o json | grep '"state": "waiting"' >/dev/null; do
	if [ $((SECONDS - start)) -gt 240 ]; then
		echo "managers still waiting after 4 minutes" >&2
		exit 1
	fi
	sleep 5
done
echo "all due after $((SECONDS - start))s"

step "nsman sweep --dry-run: the plan, and what each DELETE and SCALE_DOWN would reclaim (the RECLAIMED column, the last line)"
nsman sweep --dry-run

step "nsman sweep --webhook-allow 127.0.0.0/8 --notify-url: for real, webhooks and a notification per action to the receiver on loopback only"
nsman sweep --webhook-allow 127.0.0.0/8 --notify-url "$receiver/notify"

step "what happened"
kubectl get namespaces
echo
kubectl -n demo-pods-scale get deployments,statefulsets \
	-o custom-columns='KIND:.kind,NAME:.metadata.name,REPLICAS:.spec.replicas,RECORDED:.metadata.annotations.nsman\.k8s\.consol\.de/replicas-before-scale-down'
echo
echo "webhook receipts (the managers' WEBHOOK actions, and a notification per action at /notify):"
tail -n +2 "$work/webhooks.log"
echo
echo "managers that deleted the namespace they live in (demo-ttl, demo-two-policies) go with it: nsman wrote"
echo "only its claim on them, so they show no state; the sweep's report above says they fired"
kubectl get nsman -A
echo
echo "a manager that outlives its DELETE keeps what it reclaimed in its status:"
kubectl -n namespace-manager get nsman demo-trusted-expiry -o jsonpath='{.status.lastAction.reclaimed}{"\n"}'
echo
kubectl get events -A --field-selector reportingComponent=nsman.k8s.consol.de/sweep 2>/dev/null ||
	kubectl get events -n namespace-manager

step "stages: examples/lifecycle-stages.yaml warns at 46 h, parks at 48 h, deletes at 72 h; here at 10, 12 and 14 s"
sed -e "s#http://webhook-receiver\.[a-z0-9-]*\.svc:8080#$receiver#" \
	-e 's/ttlSeconds: 165600/ttlSeconds: 10/' -e 's/ttlSeconds: 172800/ttlSeconds: 12/' -e 's/ttlSeconds: 259200/ttlSeconds: 14/' \
	examples/lifecycle-stages.yaml | kubectl apply -f -
sleep 15
for stage in 1 2 3; do
	echo "sweep $stage: one action per sweep, the first policy that holds and has not fired"
	nsman sweep -n demo-lifecycle --webhook-allow 127.0.0.0/8
done
kubectl -n demo-lifecycle get deployments 2>/dev/null || true
kubectl get namespace demo-lifecycle

step "egress by trust: a tenant's webhook may reach a Service of its own namespace and public addresses, nothing else"
kubectl create namespace demo-egress
kubectl apply -f - <<YAML
apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata: {name: demo-egress, namespace: demo-egress}
spec:
  policies:
    - name: report at once
      condition: {type: TTL, params: {ttlSeconds: 0}}
      action: {type: WEBHOOK, params: {url: "$receiver/egress"}}
YAML
echo "without --webhook-allow, the receiver on loopback is refused; the tenant reads why, and nothing of the network:"
nsman sweep -n demo-egress || true
kubectl -n demo-egress get nsman demo-egress -o jsonpath='{.status.lastAction.message}{"\n"}'
kubectl delete namespace demo-egress --wait=false

step "a pipeline crashed: it left e2e-* namespaces behind and never created a manager for them"
kubectl create namespace e2e-run-101
kubectl create namespace e2e-run-102
kubectl create namespace e2e-run-103
echo "one more, e2e-kept, has a manager of its own (delete in a day):"
kubectl create namespace e2e-kept
kubectl apply -f - <<'YAML'
apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata: {name: keep-e2e-kept, namespace: namespace-manager}
spec:
  namespace: e2e-kept
  policies:
    - name: delete in a day
      condition: {type: TTL, params: {ttlSeconds: 86400}}
      action: {type: DELETE}
YAML

step "one rule over every e2e-* namespace (15 s for the demo; examples/ has one with a real TTL)"
kubectl apply -f - <<'YAML'
apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata: {name: e2e-leftovers, namespace: namespace-manager}
spec:
  namePatterns: ["e2e-*"]
  policies:
    - name: gone after 15 seconds
      condition: {type: TTL, params: {ttlSeconds: 15}}
      action: {type: DELETE}
YAML
nsman sweep --dry-run --at "$(date -u -d '+1 min' +%Y-%m-%dT%H:%M:%SZ)"
echo "someone is still looking at e2e-run-103: hold it for an hour"
bin/nsman hold e2e-run-103 --for 1h
sleep 16

step "one sweep: the leftovers are gone but the held one; e2e-kept is left to its own manager"
nsman sweep
kubectl get namespaces
echo
kubectl -n namespace-manager get nsman e2e-leftovers \
	-o custom-columns='RULE:.metadata.name,STATE:.status.state,MESSAGE:.status.message'

step "a second sweep: nothing left to do"
nsman sweep

step "spec.enforce: the rule acts on e2e-kept too, whatever manager it has (a dry run shows it)"
kubectl -n namespace-manager patch nsman e2e-leftovers --type merge -p '{"spec":{"enforce":true}}'
nsman sweep --dry-run

step "a dry run from a laptop sees what the installed CronJob sees: its namespace and its flags (here, one more protected namespace)"
sed -e 's/^spec:$/spec:\n  suspend: true/' \
	-e 's/^\( *\)- --log-format=json$/&\n\1- --protected-namespaces=default,namespace-manager,e2e-kept/' \
	deploy/base/cronjob.yaml | kubectl apply -f -
bin/nsman sweep --dry-run -n namespace-manager
echo "the same dry run with this command's flags alone:"
nsman sweep --dry-run -n namespace-manager --config-from none

step "nsman doctor: the cluster as that CronJob sees it: the CRD, its ServiceAccount's permissions, its namespaces, the webhook policy"
bin/nsman doctor
kubectl -n namespace-manager delete cronjob nsman

step "a namespace stuck in Terminating: an object whose finalizer nobody removes; nsman explain and the sweep say what holds it"
kubectl apply -f - <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: buckets.demo.nsman.test}
spec:
  group: demo.nsman.test
  scope: Namespaced
  names: {kind: Bucket, plural: buckets}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
YAML
established buckets.demo.nsman.test
kubectl create namespace preview-stuck
kubectl -n preview-stuck apply -f - <<'YAML'
apiVersion: demo.nsman.test/v1
kind: Bucket
metadata: {name: assets, finalizers: [storage.demo.nsman.test/empty-first]}
YAML
echo "a manager in namespace-manager deletes it at once (a sweep tells only of namespaces its managers and rules aim at):"
kubectl apply -f - <<'YAML'
apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata: {name: delete-preview-stuck, namespace: namespace-manager, labels: {demo: stuck}}
spec:
  namespace: preview-stuck
  policies:
    - name: delete at once
      condition: {type: TTL, params: {ttlSeconds: 0}}
      action: {type: DELETE}
YAML
nsman sweep -l demo=stuck
until kubectl get namespace preview-stuck -o jsonpath='{.status.conditions[?(@.type=="NamespaceFinalizersRemaining")].status}' | grep -q True; do sleep 1; done
echo "given --kubeconfig (or --context), every command it prints names that cluster, so that pasted later it cannot hit another"
bin/nsman explain preview-stuck --kubeconfig "$KUBECONFIG"
echo "a sweep says it too, past --stuck-after (10m by default; 1s here): stuck lines in its report, the manager's status, a Warning Event"
sleep 2
nsman sweep -l demo=stuck --stuck-after 1s
echo "the finalizer's owner is gone for good here: removing it, as the report says a person could"
kubectl -n preview-stuck patch buckets.demo.nsman.test assets --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]'
kubectl wait --for=delete namespace/preview-stuck --timeout=60s

step "expiry dates: CI writes nsman.k8s.consol.de/expires on each preview namespace, one rule enforces it (examples/rule-expires.yaml)"
kubectl apply -f examples/rule-expires.yaml
kubectl -n namespace-manager label namespacemanager demo-preview-expiry demo=expires
nsman sweep -l demo=expires
echo "demo-preview-expired is gone; the undated and later ones wait for the 30-day backstop; the misdated one is reported, once:"
kubectl -n namespace-manager get events --field-selector reason=AnnotationIgnored -o custom-columns=REASON:.reason,MESSAGE:.message

step "idle previews: one rule deletes each preview nothing has happened in for 72 hours (examples/idle-preview.yaml)"
kubectl apply -f examples/idle-preview.yaml
kubectl -n namespace-manager label namespacemanager demo-idle-previews demo=idle
kubectl -n demo-idle-web rollout status deployment/web --timeout=60s
quiet=$(date -u +%s) # nothing is created in demo-idle-touched from now on
sleep 2
echo "CI deploys to demo-idle-web again: a rollout, a new ReplicaSet"
kubectl -n demo-idle-web rollout restart deployment/web
idle_at=$(date -u -d "@$((quiet + 72 * 3600 + 1))" +%Y-%m-%dT%H:%M:%SZ)
echo "72 hours on (a dry run --at): demo-idle-touched is idle, the rollout keeps demo-idle-web; demo-idle-mistouched's annotation, no time, is ignored (its message says so): idle too"
nsman sweep --dry-run -l demo=idle --at "$idle_at"
echo "CI touches demo-idle-touched at its deploy (nsman touch): 72 hours on, it waits too"
bin/nsman touch demo-idle-touched
nsman sweep --dry-run -l demo=idle --at "$idle_at"

step "GitOps previews: an Application goes, its namespace follows (examples/owner-gone-previews.yaml: one rule over demo-pr-*, OWNER_GONE then DELETE)"
echo "Argo CD's own Application CRD (no Argo CD runs here), and an Application per pull request in argocd:"
kubectl apply --server-side -f "$application_crd"
established applications.argoproj.io
kubectl create namespace argocd
kubectl apply -f - <<'YAML'
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: demo-pr-14, namespace: argocd}
spec:
  project: default
  source: {repoURL: https://git.invalid/shop.git, path: deploy/preview, targetRevision: HEAD}
  destination: {server: https://kubernetes.default.svc, namespace: demo-pr-14}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: demo-pr-15, namespace: argocd}
spec:
  project: default
  source: {repoURL: https://git.invalid/shop.git, path: deploy/preview, targetRevision: HEAD}
  destination: {server: https://kubernetes.default.svc, namespace: demo-pr-15}
  syncPolicy: {syncOptions: [CreateNamespace=true]}
YAML
echo "their namespaces as Argo CD's syncs leave them: demo-pr-14 from the source, with Argo CD's tracking id; demo-pr-15 made by CreateNamespace=true, with no marker"
kubectl apply -f - <<'YAML'
apiVersion: v1
kind: Namespace
metadata:
  name: demo-pr-14
  annotations: {argocd.argoproj.io/tracking-id: "demo-pr-14:/Namespace:demo-pr-14/demo-pr-14"}
---
apiVersion: v1
kind: Namespace
metadata: {name: demo-pr-15}
YAML
echo "the rule, its grace 5 s rather than 5 minutes; the example's demo-pr-12 names an Application that is gone already, demo-pr-13 a Flux Kustomization, whose CRD is not installed here:"
sed 's/graceSeconds: 300/graceSeconds: 5/' examples/owner-gone-previews.yaml | kubectl apply -f -
kubectl -n namespace-manager label namespacemanager demo-pr-orphans demo=gitops
echo "a dry run: each namespace's owner, on the line under its row: demo-pr-12's is gone, demo-pr-14's and demo-pr-15's exist, demo-pr-13's cannot be read (unknown is never gone)"
nsman sweep --dry-run -l demo=gitops
echo "pull request 14 closes: the ApplicationSet deletes its Application"
kubectl -n argocd delete application demo-pr-14
echo "a sweep finds demo-pr-14's owner gone, and demo-pr-12's: each namespace's record keeps since when"
nsman sweep -l demo=gitops
sleep 6
echo "the grace has passed: demo-pr-12 and demo-pr-14 go; demo-pr-15's Application exists and demo-pr-13's owner cannot be read: they stay"
nsman sweep -l demo=gitops
kubectl get namespaces | grep -E '^(NAME|demo-pr-)'
echo "a TTL rule without via over demo-pr-15, whose Application exists: the DELETE goes ahead and says who may make the namespace again"
kubectl apply -f - <<'YAML'
apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata: {name: demo-pr-ttl, namespace: namespace-manager, labels: {demo: gitops-ttl}}
spec:
  namePatterns: [demo-pr-15]
  policies:
    - name: at once
      condition: {type: TTL, params: {ttlSeconds: 0}}
      action: {type: DELETE}
YAML
nsman sweep -l demo=gitops-ttl
kubectl wait --for=delete namespace/demo-pr-15 --timeout=60s
echo "Argo CD's self-heal makes it again (kubectl in its place here): nsman explain names its owner and the rule that deleted it, and a dry run's entry says it came back"
kubectl create namespace demo-pr-15
bin/nsman explain demo-pr-15 --kubeconfig "$KUBECONFIG"
nsman sweep --dry-run -l demo=gitops-ttl
kubectl -n namespace-manager delete namespacemanager demo-pr-ttl

step "windows: examples/windows-night-scale-down.yaml parks a preview only at night or at the weekend, Europe/Berlin"
kubectl apply -f examples/windows-night-scale-down.yaml
echo "its TTL passed at a Tuesday's 14:00 (a dry run --at): it waits for the window, and says when it opens"
nsman sweep --dry-run -n demo-windows --at "$(date -u -d "$(date -u -d 'next tuesday' +%Y-%m-%d) 13:00" +%Y-%m-%dT%H:%M:%SZ)"
echo "and at 21:00 that day it acts"
nsman sweep --dry-run -n demo-windows --at "$(date -u -d "$(date -u -d 'next tuesday' +%Y-%m-%d) 20:00" +%Y-%m-%dT%H:%M:%SZ)"

step "sleep and wake: examples/sleep-nights-weekends.yaml puts every demo-dev-* namespace to sleep at night and at the weekend, Europe/Berlin"
kubectl apply -f examples/sleep-nights-weekends.yaml
kubectl -n namespace-manager label namespacemanager demo-dev-nights demo=sleep
echo "a Tuesday at 21:00 in Berlin (a dry run --at): demo-dev-team would sleep (web and sync; api is labelled keep-awake, nightly-report suspended already)"
nsman sweep --dry-run -l demo=sleep --at "$(TZ=Europe/Berlin date -d 'next tuesday 21:00' +%Y-%m-%dT%H:%M:%S%:z)"
echo "at 10:00 that day it is awake, and waits for the night"
nsman sweep --dry-run -l demo=sleep --at "$(TZ=Europe/Berlin date -d 'next tuesday 10:00' +%Y-%m-%dT%H:%M:%S%:z)"
echo "examples/sleep-idle-previews.yaml: demo-preview-idle-4711 sleeps once nothing has happened in it for two hours (a dry run --at)"
kubectl apply -f examples/sleep-idle-previews.yaml
kubectl -n namespace-manager label namespacemanager demo-preview-idle demo=sleep-idle
nsman sweep --dry-run -l demo=sleep-idle --at "$(date -u -d '+2 hours 5 min' +%Y-%m-%dT%H:%M:%SZ)"

step "for real: demo-sleep-now's manager sleeps it in a window open now (UTC), nsman wake wakes it for 15 s, then it sleeps again"
kubectl create namespace demo-sleep-now
kubectl apply -f - <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: demo-sleep-now}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: registry.k8s.io/pause:3.10}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: sync, namespace: demo-sleep-now}
spec:
  schedule: "*/30 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: sync, image: registry.k8s.io/pause:3.10}]
---
apiVersion: k8s.consol.de/v1beta1
kind: NamespaceManager
metadata: {name: demo-sleep-now, namespace: demo-sleep-now}
spec:
  policies:
    - name: sleep now
      condition: {type: TTL, params: {ttlSeconds: 0}}
      windows: [{from: "$(date -u -d '-1 min' +%H:%M)", to: "$(date -u -d '+15 min' +%H:%M)", timeZone: UTC}]
      action: {type: SLEEP}
YAML
workloads() {
	kubectl -n demo-sleep-now get deployments,cronjobs \
		-o custom-columns='KIND:.kind,NAME:.metadata.name,REPLICAS:.spec.replicas,SUSPEND:.spec.suspend,REPLICAS-BEFORE:.metadata.annotations.nsman\.k8s\.consol\.de/replicas-before-scale-down,SUSPEND-BEFORE:.metadata.annotations.nsman\.k8s\.consol\.de/suspend-before-scale-down'
}
nsman sweep -n demo-sleep-now
echo "asleep: web at 0 replicas and sync suspended, each with a record of what it had; an Event Slept on the manager"
workloads
kubectl -n demo-sleep-now get events --field-selector reason=Slept -o custom-columns=REASON:.reason,MESSAGE:.message
echo "a sweep while asleep writes nothing to the workloads; the manager says since when, and NEXT DUE when it wakes"
nsman sweep -n demo-sleep-now
kubectl -n demo-sleep-now get nsman demo-sleep-now
kubectl -n demo-sleep-now get nsman demo-sleep-now -o jsonpath='status.asleep: {.status.asleep}{"\n"}'
echo "someone needs it now: nsman wake, and the next sweep wakes it"
bin/nsman wake demo-sleep-now --for 15s
nsman sweep -n demo-sleep-now
workloads
sleep 16
echo "the wake is over and the window still open: the next sweep puts it to sleep again"
nsman sweep -n demo-sleep-now
workloads
kubectl -n demo-sleep-now get events --field-selector involvedObject.kind=NamespaceManager --sort-by=.metadata.creationTimestamp \
	-o custom-columns=REASON:.reason,MESSAGE:.message

step "more of a namespace sleeps: examples/sleep-nights-flux-suspend.yaml also suspends a Flux HelmRelease (patches) and parks a LoadBalancer (loadBalancers)"
echo "Flux's own HelmRelease CRD (no Flux runs here); the example's window moved to now, UTC"
kubectl apply --server-side -f "$helmrelease_crd"
established helmreleases.helm.toolkit.fluxcd.io
sed -e "s/from: \"20:00\"/from: \"$(date -u -d '-1 min' +%H:%M)\"/" -e "s/to: \"07:00\"/to: \"$(date -u -d '+15 min' +%H:%M)\"/" \
	-e 's#timeZone: Europe/Berlin#timeZone: UTC#' examples/sleep-nights-flux-suspend.yaml | kubectl apply -f -
kubectl -n namespace-manager label namespacemanager demo-flux-nights demo=sleep-flux
parked() {
	kubectl -n demo-flux-shop get deployments,services,helmreleases -o custom-columns='KIND:.kind,NAME:.metadata.name,REPLICAS:.spec.replicas,TYPE:.spec.type,SUSPEND:.spec.suspend,RECORD:.metadata.annotations.nsman\.k8s\.consol\.de/patched-before-sleep,LB-RECORD:.metadata.annotations.nsman\.k8s\.consol\.de/load-balancer-before-sleep'
}
nsman sweep -l demo=sleep-flux
echo "asleep: web at 0, the Service a ClusterIP (its LoadBalancer's fields recorded), the labelled HelmRelease suspended (the patch and its inverse recorded); monitoring is left as it is"
parked
echo "the window closes: the wake takes back what each record says"
kubectl -n namespace-manager patch namespacemanager demo-flux-nights --type json \
	-p "[{\"op\":\"replace\",\"path\":\"/spec/policies/0/windows\",\"value\":[{\"from\":\"$(date -u -d '+3 hours' +%H:%M)\",\"to\":\"$(date -u -d '+4 hours' +%H:%M)\",\"timeZone\":\"UTC\"}]}]"
nsman sweep -l demo=sleep-flux
parked

step "idle means unused: examples/sleep-idle-traffic.yaml sleeps each demo-preview-traffic-* preview two hours after its last request through ingress-nginx (20 s here), asking a Prometheus"
go build -o bin/traffic-exporter ./test/traffic-exporter
bin/traffic-exporter -namespace demo-preview-traffic-4711 -for 35s -dir "$work/prometheus" >"$work/traffic.log" 2>"$work/traffic.err" &
traffic_pid=$!
until [ -s "$work/traffic.log" ] || ! kill -0 "$traffic_pid" 2>/dev/null; do sleep 0.1; done
prometheus=$(head -n 1 "$work/traffic.log")
case "$prometheus" in http://*) ;; *) echo "the traffic exporter did not start:" >&2; cat "$work/traffic.err" >&2; exit 1 ;; esac
echo "Prometheus at $prometheus, scraping ingress-nginx's request counter; a request to demo-preview-traffic-4711 every 300 ms for 35 s"
sed 's/idleSeconds: 7200/idleSeconds: 20/' examples/sleep-idle-traffic.yaml | kubectl apply -f -
kubectl -n namespace-manager label namespacemanager demo-preview-traffic demo=traffic
traffic() { nsman sweep -l demo=traffic --prometheus-url "$prometheus"; }
sleep 21
echo "nothing has happened in it for 20 s but its requests, which keep it awake"
traffic
until grep -q "requests stopped" "$work/traffic.log"; do sleep 1; done
sleep 21
echo "no request for 20 s: it sleeps"
traffic
kubectl -n demo-preview-traffic-4711 get deployments
echo "a request comes, which ingress-nginx answers 503 and counts: the next sweep wakes it"
kill -USR1 "$traffic_pid"
sleep 3
traffic
kubectl -n demo-preview-traffic-4711 get deployments
kill "$traffic_pid"
wait "$traffic_pid" || true
traffic_pid=
sleep 21
echo "Prometheus is down: no answer is never idleness; it stays awake, and the sweep says why"
traffic

step "tell people first: examples/warn-preview-ttl.yaml deletes demo-warn-preview a week after its creation and warns its team a day and an hour before; here the TTL is 40 s"
head -c 32 /dev/urandom | base64 >"$work/links-key"
echo "$receiver/team-a" >"$work/team-a-url"
echo "nsman serve answers the links, with the key the sweep signs them with ($work/links-key)"
bin/nsman serve --listen 127.0.0.1:0 --links-signing-key-file "$work/links-key" --log-format text >"$work/serve.log" 2>&1 &
serve_pid=$!
until grep -q 'serving links' "$work/serve.log"; do sleep 0.1; done
serve_url="http://$(grep -o 'address=[^ ]*' "$work/serve.log" | head -n 1 | cut -d= -f2)"
echo "serve at $serve_url"
sed 's/ttlSeconds: 604800/ttlSeconds: 40/' examples/warn-preview-ttl.yaml | kubectl apply -f -
created=$(date +%s)
echo "a sweep: it is due within both thresholds, and warns once (the smaller) on team-a's channel, which the namespace's annotation picks"
warn_sweep() {
	nsman sweep -n demo-warn-preview --notify-url "$receiver/notify" --notify-channel team-a="$work/team-a-url" \
		--links-url "$serve_url" --links-signing-key-file "$work/links-key"
}
warn_sweep
until grep -q ' /team-a ' "$work/webhooks.log"; do sleep 0.1; done
echo "what arrived at team-a's receiver (its three links shortened to [...]):"
grep -A1 ' /team-a ' "$work/webhooks.log" | sed 's/"links":\[[^]]*\]/"links":[...]/'
extend=$(grep -A1 ' /team-a ' "$work/webhooks.log" | grep -o '"action":"extend","duration":"24h","url":"[^"]*"' | head -n 1 | sed 's/.*"url":"//; s/"$//')
echo "its link to extend by a day: $extend"
echo "a GET, as a chat app's preview makes: a page with a button, and nothing written"
page=$(curl -fsS "$extend")
echo "$page" | grep -o '<h1[^>]*>[^<]*' | sed 's/<h1[^>]*>//'
hold=$(kubectl get namespace demo-warn-preview -o jsonpath='{.metadata.annotations.nsman\.k8s\.consol\.de/hold-until}')
echo "its hold after the GET: ${hold:-none}"
echo "pressing the button (the page's POST, from serve's own origin):"
curl -fsS -X POST -H "Origin: $serve_url" --data-urlencode "t=${extend#*\?t=}" \
	--data-urlencode "f=$(echo "$page" | grep -o 'name="f" value="[^"]*"' | sed 's/.*value="//; s/"$//')" "$serve_url/link" |
	grep -o '<p>[^<]*' | sed 's/<p>//'
kubectl get namespace demo-warn-preview -o custom-columns='NAME:.metadata.name,HOLD-UNTIL:.metadata.annotations.nsman\.k8s\.consol\.de/hold-until'
left=$((created + 42 - $(date +%s)))
[ "$left" -gt 0 ] && sleep "$left"
echo "past the TTL's 40 s: the hold keeps it, and moved its due time a day on (a new due time, warned again at 24h)"
warn_sweep
kubectl get namespace demo-warn-preview
echo "what serve logged:"
grep 'answered a link' "$work/serve.log"
kill "$serve_pid"
wait "$serve_pid" || true
serve_pid=
kubectl delete namespace demo-warn-preview --wait=false

step "freezes: nothing acts over the holidays (--freeze, or --freeze-file, a calendar); due managers wait until the freeze ends"
nsman sweep --dry-run -n demo-windows --at "$(date -u -d "$(date -u -d 'next tuesday' +%Y-%m-%d) 20:00" +%Y-%m-%dT%H:%M:%SZ)" \
	--freeze "$(date -u -d 'next tuesday' +%Y-%m-%d)/$(date -u -d 'next tuesday +1 day' +%Y-%m-%d)"
