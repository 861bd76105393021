#!/usr/bin/env bash
# Builds the control-plane binaries that the modules beside this script pin
# (kube-apiserver, kube-controller-manager, kube-scheduler, the
# kube-apiserver of the oldest Kubernetes nsman supports, etcd, kwok with
# kwok's Stage manifests, the Prometheus Pushgateway that the metrics
# tests push to, the Helm client that lints and installs nsman's chart,
# the kubectl of the same release as the API server, which the tests run
# for kubectl kustomize, kubectl apply and kubectl plugins, promtool, the
# Prometheus server of the same release, which the traffic tests query, and
# krew, which installs a release's archives from its krew manifest)
# into ${XDG_CACHE_HOME:-$HOME/.cache}/nsman/<component>-<version>/.
# A binary already in the cache is never rebuilt, so a fresh clone reuses them.
set -euo pipefail

tools=$(cd "$(dirname "$0")" && pwd)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/nsman"

# version DIR MODULE prints the version of MODULE that the tools module DIR pins.
version() { (cd "$tools/$1" && go list -m -f '{{.Version}}' "$2"); }

# build DIR OUT NAME PACKAGE LDFLAGS [GO BUILD FLAGS...] builds PACKAGE of
# the tools module DIR into OUT/NAME unless it is there already, as the
# Makefile's TOOL_BUILD builds its tools: without debug information, and
# with the compiler collecting its garbage less often (a fifth to a quarter
# faster cold).
build() {
	local dir=$1 out=$2 name=$3 pkg=$4 ldflags=$5
	shift 5
	if [ -x "$out/$name" ]; then
		return
	fi
	mkdir -p "$out"
	echo "building $name into $out" >&2
	local start=$SECONDS
	(cd "$tools/$dir" && GOGC=400 go build -gcflags=all=-dwarf=false -ldflags "-s -w $ldflags" "$@" -o "$out/.$name.tmp" "$pkg")
	mv -f "$out/.$name.tmp" "$out/$name"
	echo "built $name in $((SECONDS - start))s" >&2
}

kube=$(version kube k8s.io/kubernetes)
kube_out="$cache/kubernetes-$kube"
minor=$(echo "$kube" | cut -d. -f2)
kube_ldflags="-X k8s.io/component-base/version.gitVersion=$kube -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
for bin in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
	build kube "$kube_out" "$bin" "k8s.io/kubernetes/cmd/$bin" "$kube_ldflags"
done

# The kube-apiserver of the oldest Kubernetes nsman supports, on which the
# tests install nsman's CRD, RBAC and admission policy. It is built
# providerless, as Kubernetes' own build allows: without the in-tree cloud
# providers that release still links (GCE's, with Google's API clients),
# which no test configures; cold on 2 cores, 232 s rather than 279. The
# current release has none to leave out.
kube_min=$(version kube-min k8s.io/kubernetes)
kube_min_ldflags="-X k8s.io/component-base/version.gitVersion=$kube_min -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$kube_min" | cut -d. -f2) -X k8s.io/component-base/version.gitTreeState=clean"
build kube-min "$cache/kubernetes-$kube_min" kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$kube_min_ldflags" -tags providerless

etcd=$(version etcd go.etcd.io/etcd/server/v3)
build etcd "$cache/etcd-$etcd" etcd go.etcd.io/etcd/server/v3 ""

kwok=$(version kwok sigs.k8s.io/kwok)
kwok_out="$cache/kwok-$kwok"
build kwok "$kwok_out" kwok sigs.k8s.io/kwok/cmd/kwok ""
if [ ! -s "$kwok_out/stages.yaml" ]; then
	# kwok only moves nodes and pods through their lifecycle when given Stages;
	# its module ships them.
	src=$(cd "$tools/kwok" && go mod download -json sigs.k8s.io/kwok | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	for f in "$src"/kustomize/stage/node/fast/node-initialize.yaml \
		"$src"/kustomize/stage/node/heartbeat/node-heartbeat.yaml \
		"$src"/kustomize/stage/pod/general/pod-*.yaml; do
		echo "---"
		cat "$f"
	done >"$kwok_out/.stages.yaml.tmp"
	mv -f "$kwok_out/.stages.yaml.tmp" "$kwok_out/stages.yaml"
fi

# The Pushgateway that the metrics tests push to. Its version string comes
# from github.com/prometheus/common/version, as the release builds set it.
pushgateway=$(version pushgateway github.com/prometheus/pushgateway)
build pushgateway "$cache/pushgateway-$pushgateway" pushgateway github.com/prometheus/pushgateway \
	"-X github.com/prometheus/common/version.Version=${pushgateway#v}"

# Helm, which make helm-lint and the chart's integration tests run. Its
# version string is set as Helm's own release builds set it.
helm=$(version helm helm.sh/helm/v4)
build helm "$cache/helm-$helm" helm helm.sh/helm/v4/cmd/helm \
	"-X helm.sh/helm/v4/internal/version.version=$helm"

# krew, which the end-to-end tests run to install the archives that
# scripts/dist.sh packs, from the krew manifest it renders, as krew-index's
# checks do. Its version string is set as krew's release builds set it.
krew=$(version krew sigs.k8s.io/krew)
build krew "$cache/krew-$krew" krew sigs.k8s.io/krew/cmd/krew \
	"-X sigs.k8s.io/krew/internal/version.gitTag=$krew"

# promtool, which tests nsman's alerting rules and its dashboard's queries.
# remove_all_sd leaves out the service discovery plugins, which checking
# and testing rules never uses (file and Kubernetes discovery stay, as
# promtool imports them itself): they cost a cold build some 9 minutes on
# top of the 5 that the rest takes on 2 shared cores. Its version string
# is set as Prometheus's release builds set it: the module's v0.3MM.P is
# Prometheus 3.MM.P.
prometheus=$(version promtool github.com/prometheus/prometheus)
prometheus_minor=${prometheus#v0.}
prometheus_release="3.$((${prometheus_minor%%.*} - 300)).${prometheus_minor#*.}"
build promtool "$cache/promtool-$prometheus" promtool github.com/prometheus/prometheus/cmd/promtool \
	"-X github.com/prometheus/common/version.Version=$prometheus_release" -tags remove_all_sd

# The Prometheus server of the same module and version, which the tests of
# IDLE from traffic start to scrape an exporter of their own and query. It
# is built as promtool is, after it (the two share most of their packages),
# with remove_all_sd: the tests scrape static targets only. It is built
# without the builtinassets tag, as a `go build` of the module can only be:
# the web UI's compiled assets are not in the module, so the server serves
# no UI (its pages answer 404) and the HTTP API (/api/v1/..., /-/ready) as
# ever.
build promtool "$cache/prometheus-$prometheus" prometheus github.com/prometheus/prometheus/cmd/prometheus \
	"-X github.com/prometheus/common/version.Version=$prometheus_release" -tags remove_all_sd

# The CRDs of the GitOps projects whose objects own namespaces (Argo CD's
# Application, Flux's Kustomization and HelmRelease), which the tests
# install (no controller runs): each file that test/tools/gitops/crds names,
# from the release tree of the module test/tools/gitops pins, downloaded
# through the Go module proxy and checked against its go.sum.
while read -r module prefix file <&3; do
	case $module in '' | '#'*) continue ;; esac
	out="$cache/$prefix-$(version gitops "$module")"
	name=$(basename "$file")
	if [ -s "$out/$name" ]; then
		continue
	fi
	src=$(cd "$tools/gitops" && go mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	if [ -z "$src" ] || [ ! -s "$src/$file" ]; then
		echo "$module: no $file in its module" >&2
		exit 1
	fi
	mkdir -p "$out"
	cat "$src/$file" >"$out/.$name.tmp"
	mv -f "$out/.$name.tmp" "$out/$name"
	echo "copied $name into $out" >&2
done 3<"$tools/gitops/crds"
