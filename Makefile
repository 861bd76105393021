# nsman's build, tests and local control plane. `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/nsman/nsman/cmd.version=$(VERSION)
CACHE := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/nsman

# Packages that need no control plane (with test/nsmantest, whose own tests
# need none), and those that start one.
UNIT_PKGS = $(shell go list ./... | grep -v '/test/') ./test/nsmantest/ ./test/fixtures/original/
INTEGRATION_PKGS = ./test/cluster/... ./test/integration/... ./test/compat/... ./test/robust/... ./test/monitoring/... ./test/traffic/... ./test/browser/...
E2E_PKGS = ./test/e2e/...
# test/tools/gitops is not among them: it pins the GitOps projects whose
# CRDs the tests install and builds nothing, so tidy would drop its pins.
TOOL_MODULES = test/tools/kube test/tools/kube-min test/tools/etcd test/tools/kwok test/tools/lint test/tools/pushgateway test/tools/helm test/tools/promtool test/tools/krew

# How the tools that the tests run are built, here and in test/tools/build.sh:
# without debug information, and with the compiler collecting its garbage
# less often (GOGC=400, which go vet's compiles get too; it changes no
# output). Cold on 2 cores, kwok built in 113 s rather than 142 s, the oldest
# kube-apiserver in 306 s rather than 404 s, at 1.4 GiB rather than 2.1.
TOOL_BUILD = GOGC=400 go build -gcflags=all=-dwarf=false
TOOL_LDFLAGS = -s -w

STATICCHECK_VERSION = $(shell cd test/tools/lint && go list -m -f '{{.Version}}' honnef.co/go/tools)
STATICCHECK = $(CACHE)/staticcheck-$(STATICCHECK_VERSION)/staticcheck
ACTIONLINT_VERSION = $(shell cd test/tools/lint && go list -m -f '{{.Version}}' github.com/rhysd/actionlint)
ACTIONLINT = $(CACHE)/actionlint-$(ACTIONLINT_VERSION)/actionlint
HELM_VERSION = $(shell cd test/tools/helm && go list -m -f '{{.Version}}' helm.sh/helm/v4)
HELM = $(CACHE)/helm-$(HELM_VERSION)/helm
CHART = deploy/helm/nsman

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-22s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/nsman
	go build -ldflags '$(LDFLAGS)' -o bin/nsman ./cmd/nsman

# The platforms that build-cross proves the binary builds for, beyond this
# machine's: the image's arm64 half and the release's darwin binaries. It
# writes nothing: the release builds the binaries. So it builds as the tools
# are (TOOL_BUILD) and without optimizations (-N -l), which no compile error
# depends on: cold on 2 cores, darwin/arm64 built in 73 s rather than 109.
CROSS_PLATFORMS = linux/arm64 darwin/arm64

.PHONY: build-cross
build-cross: ## Cross-compile nsman for linux/arm64 and darwin/arm64 (CGO_ENABLED=0, -trimpath, stripped, as the image and release build), proving it builds there; writes no binary
	@for p in $(CROSS_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; \
		echo "GOOS=$$os GOARCH=$$arch go build ./cmd/nsman"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(TOOL_BUILD) -gcflags='all=-dwarf=false -N -l' -trimpath -ldflags '-s -w $(LDFLAGS)' -o /dev/null ./cmd/nsman; \
	done

# Where install-plugin links kubectl-nsman: go install's directory (GOBIN,
# else GOPATH/bin), which Go users tend to have on PATH. PLUGIN_DIR= to
# choose, e.g. PLUGIN_DIR=$(HOME)/.local/bin.
PLUGIN_DIR ?= $(or $(shell go env GOBIN),$(shell go env GOPATH)/bin)

.PHONY: install-plugin
install-plugin: build ## Link kubectl-nsman in PLUGIN_DIR (default: go env GOBIN, else GOPATH/bin) to bin/nsman, for 'kubectl nsman'
	@mkdir -p '$(PLUGIN_DIR)'
	ln -sf '$(CURDIR)/bin/nsman' '$(PLUGIN_DIR)/kubectl-nsman'
	ln -sf '$(CURDIR)/deploy/kubectl-plugin/kubectl_complete-nsman' '$(PLUGIN_DIR)/kubectl_complete-nsman'
	@echo "installed $(PLUGIN_DIR)/kubectl-nsman -> $(CURDIR)/bin/nsman, and kubectl_complete-nsman for kubectl nsman <TAB>"
	@case ":$$PATH:" in *":$(PLUGIN_DIR):"*) echo "try: kubectl nsman version" ;; \
		*) echo "$(PLUGIN_DIR) is not on PATH: add it, then try: kubectl nsman version" ;; esac

.PHONY: control-plane
control-plane: ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, the oldest supported kube-apiserver, kwok, the Pushgateway, Helm, promtool and the Prometheus server of the same release, krew, and fetch the Argo CD and Flux CRDs the tests install, into the user cache (once)
	test/tools/build.sh

# Chromium, which test/browser drives (nsman serve's pages in a real
# headless browser): Debian's package, installed with apt-get when none is
# on PATH and make runs as root with apt-get, as CI does. Elsewhere it says
# how to install it, and the browser tests skip (but under CI=true, where
# they fail).
.PHONY: browser
browser: ## Install Chromium from the distribution's packages (apt-get, as root) when none is on PATH, for test/browser
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "apt-get install chromium"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "no chromium on PATH, and no apt-get as root to install it: test/browser skips (install chromium)"; \
	fi

.PHONY: test
test: lint helm-lint build-cross test-unit fuzz test-integration-e2e ## Everything CI runs: lint, the chart's lint, the arm64 cross-builds, unit, fuzz (briefly), integration and end-to-end tests

# The original operator's files, which test/fixtures/original describes:
# present beside some clones, never part of the repository.
REFERENCE = $(CURDIR)/../shared/reference
REFERENCE_PKG = ./test/fixtures/original/

.PHONY: test-unit
test-unit: ## Unit tests (no control plane), and each Go benchmark run once so that one that no longer runs fails here, not in make bench; with ../shared/reference beside the repository, also the original-operator fixture's agreement with it
	go test -race -count=1 $(UNIT_PKGS)
	$(if $(BENCH_PKGS),go test -count=1 -run '^$$' -bench . -benchtime 1x $(BENCH_PKGS),@echo 'no Go benchmarks in the unit packages')
	go test -race -count=1 -skip '^TestBenchmarks$$' ./test/bench/
	@if [ -d '$(REFERENCE)' ]; then \
		echo "go test -count=1 -tags reference $(REFERENCE_PKG)"; \
		go test -count=1 -tags reference $(REFERENCE_PKG); \
	else \
		echo "no ../shared/reference: the fixture's agreement with the original operator's files (go test -tags reference $(REFERENCE_PKG)) not run"; \
	fi

# The unit packages with Go benchmarks (a func BenchmarkX in their tests,
# new files included), the only ones test-unit builds a second time, without
# the race detector, to run each benchmark once.
BENCH_PKGS = $(shell grep -rl --include='*_test.go' --exclude-dir=.git --exclude-dir=test --exclude-dir=testdata '^func Benchmark' . | xargs -r -n1 dirname | sort -u)

# The fuzz targets: every func FuzzX in the unit packages' tests (new files
# included), as dir:FuzzX. go test -fuzz takes one target per run.
FUZZ_TARGETS = $(shell grep -ro --include='*_test.go' --exclude-dir=.git --exclude-dir=test --exclude-dir=testdata '^func Fuzz[A-Za-z0-9_]*' . | sed 's|^\./||; s|/[^/]*_test\.go:func |:|' | sort)
FUZZTIME ?= 10s
LONG_FUZZTIME ?= 5m
# How long each input the fuzzer keeps is minimized: Go's default, 60s,
# spent nearly all of a short run minimizing one page of FuzzDecodePage.
FUZZMINIMIZETIME ?= 3s
# Go's fuzzing before 1.27 may fail a run that found nothing with "context
# deadline exceeded" when -fuzztime ends (go.dev/issue/75804): fuzz with a Go
# that has the fix, fetched through the module proxy, until go.mod's does.
FUZZ_GOTOOLCHAIN ?= go1.27.4

.PHONY: fuzz
fuzz: ## Fuzz each target (every func FuzzX in the unit packages' tests: managers, a page of managers, a list of metadata as protobuf, a namespace's owner markers, the webhook address policy, Retry-After, signature v2, a signed link, the JSON report's indent) for FUZZTIME each (10s; e.g. FUZZTIME=10m)
	@test -n '$(FUZZ_TARGETS)' || { echo 'no fuzz targets found' >&2; exit 1; }
	@for t in $(FUZZ_TARGETS); do \
		echo "GOTOOLCHAIN=$(FUZZ_GOTOOLCHAIN) go test -run '^\$$' -fuzz '^$${t#*:}\$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./$${t%%:*}"; \
		GOTOOLCHAIN=$(FUZZ_GOTOOLCHAIN) go test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./$${t%%:*}; \
	done

.PHONY: test-integration
test-integration: control-plane browser ## Tests against a real control plane
	go test -count=1 -timeout 20m $(INTEGRATION_PKGS)

.PHONY: test-e2e
test-e2e: control-plane $(ACTIONLINT) ## End-to-end tests of the built commands, and of the CI steps nsman ships (action.yml, deploy/ci/), whose examples actionlint checks
	go test -count=1 -timeout 20m $(E2E_PKGS)

# go test runs two packages at a time on 2 cores; test/integration, the
# longest, takes one slot for most of the run, and the end-to-end package
# fits in what the other packages leave of the other.
.PHONY: test-integration-e2e
test-integration-e2e: control-plane browser $(ACTIONLINT) ## test-integration and test-e2e in one go test, as make test runs them
	go test -count=1 -timeout 20m $(INTEGRATION_PKGS) $(E2E_PKGS)

.PHONY: test-long
test-long: control-plane ## Long variants, not in make test: each fuzz target for LONG_FUZZTIME (5m), then the robustness tests with NSMAN_LONG=1 (more managers, kill points and fault rounds)
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(LONG_FUZZTIME)
	NSMAN_LONG=1 go test -count=1 -timeout 60m -v ./test/robust/ ./test/compat/ | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|figures:'

.PHONY: docs
docs: ## Regenerate the flags reference in docs/flags.md and each command's --help in cmd/testdata/help from the commands, what nsman sweep prints in cmd/testdata/report, nsman due in cmd/testdata/due, nsman explain, nsman doctor and nsman validate in cmd/testdata/explain, doctor and validate, the CRD reference in docs/reference.md from deploy/base/crd.yaml and the tables of kinds and of traffic presets in docs/sleep.md from internal/workload and policy/traffic
	go test ./cmd -run '^(TestFlagsReferenceUpToDate|TestHelpGolden|TestReportGolden|TestDueGolden|TestExplainGolden|TestDoctorGolden|TestValidateGolden)$$' -update
	go test ./internal/crdref -run '^TestReferenceUpToDate$$' -update
	go test ./internal/workload -run '^TestSleepDocUpToDate$$' -update
	go test ./policy/traffic -run '^TestTrafficDocUpToDate$$' -update

.PHONY: bench
bench: control-plane ## Benchmarks: Go benchmarks of the unit packages, then 1,000 and 10,000 managers, a rule over 10,000 namespaces, 1,000 managers half IDLE, a hostile tenant, a tenant's fat workloads under SLEEP and SCALE_DOWN, a SLEEP rule over 1,000 namespaces of 3 workloads, a rule with OWNER_GONE over 1,000 and 10,000 namespaces, each owned by an Argo CD Application, a rule with IDLE from ingress-nginx traffic over 1,000 namespaces, a real Prometheus asked, a SLEEP rule with replicas, loadBalancers and patches (a Flux HelmRelease suspended) over 1,000 namespaces, and a sweep that warns 1,000 managers due within warnBefore (one notification each, once) against a no-op sweep plus the deliveries, on a real API server; writes BENCHMARKS.md, naming the commit measured (refuses a tree with uncommitted changes or untracked files, unless NSMAN_BENCH_ALLOW_MODIFIED=1)
	go test -count=1 -skip '^TestBenchmarks$$' ./test/bench/
	NSMAN_BENCH=1 NSMAN_BENCH_GO_PKGS='$(UNIT_PKGS)' go test -count=1 -run '^TestBenchmarks$$' -timeout 60m -v ./test/bench/

.PHONY: lint
lint: $(STATICCHECK) $(ACTIONLINT) shellcheck ## gofmt, go vet, staticcheck, go mod tidy, actionlint on .github/workflows (with shellcheck) and shellcheck on every shell script of the repository
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	GOGC=400 go vet ./...
	GOGC=400 go vet -tags reference $(REFERENCE_PKG)
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags reference $(REFERENCE_PKG)
	go mod tidy -diff
	for m in $(TOOL_MODULES); do (cd $$m && go mod tidy -diff); done
	$(ACTIONLINT) .github/workflows/*.yml
	@if command -v shellcheck >/dev/null 2>&1; then \
		echo "shellcheck $(SHELL_SCRIPTS)"; \
		shellcheck $(SHELL_SCRIPTS); \
	else \
		echo "shellcheck not on PATH: $(SHELL_SCRIPTS) not checked (install shellcheck)"; \
		if [ -n "$$CI" ]; then exit 1; fi; \
	fi

# Every shell script of the repository: the CI steps' (deploy/ci/), the
# release's, make demo's, the tools' build and CI's entry point.
SHELL_SCRIPTS = .ci/run $(shell git ls-files '*.sh')

# shellcheck, which make lint runs: Debian's package, installed with
# apt-get as Chromium is (below) when none is on PATH; elsewhere make lint
# says so and checks no script (but under CI=true, where it fails).
.PHONY: shellcheck
shellcheck:
	@if command -v shellcheck >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "apt-get install shellcheck"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null; \
	else \
		echo "no shellcheck on PATH, and no apt-get as root to install it (install shellcheck)"; \
	fi

$(STATICCHECK):
	cd test/tools/lint && $(TOOL_BUILD) -ldflags '$(TOOL_LDFLAGS)' -o $@ honnef.co/go/tools/cmd/staticcheck

$(ACTIONLINT):
	cd test/tools/lint && $(TOOL_BUILD) -ldflags '$(TOOL_LDFLAGS)' -o $@ github.com/rhysd/actionlint/cmd/actionlint

# Helm's own state (repositories, registry logins, caches) goes to a
# throwaway directory: linting the chart needs none of the user's.
.PHONY: helm-lint
helm-lint: $(HELM) ## helm lint --strict and helm template of deploy/helm/nsman, with its defaults and with each values file in its ci/
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	export HELM_CACHE_HOME=$$tmp/cache HELM_CONFIG_HOME=$$tmp/config HELM_DATA_HOME=$$tmp/data; \
	for values in '' $(CHART)/ci/*.yaml; do \
		echo "helm lint --strict / helm template $(CHART)$${values:+ -f $$values}"; \
		$(HELM) lint --strict --quiet $(CHART) $${values:+-f $$values}; \
		$(HELM) template nsman $(CHART) --namespace namespace-manager $${values:+-f $$values} >/dev/null; \
	done

# The same build as test/tools/build.sh's, which the tests use.
$(HELM):
	cd test/tools/helm && $(TOOL_BUILD) -ldflags '$(TOOL_LDFLAGS) -X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION)' -o $@ helm.sh/helm/v4/cmd/helm

.PHONY: cluster-up
cluster-up: control-plane ## Start a full control plane in the background; prints KUBECONFIG=<path> last
	@go build -o bin/nsman-cluster ./test/cluster/nsman-cluster
	@bin/nsman-cluster -dir .cluster up

.PHONY: cluster-down
cluster-down: ## Stop the control plane that cluster-up started
	@go build -o bin/nsman-cluster ./test/cluster/nsman-cluster
	@bin/nsman-cluster -dir .cluster down

.PHONY: demo
demo: build control-plane ## Start a control plane, install the CRD and RBAC, apply examples/, show the dry-run plan and what it would reclaim, sweep for real, play stages, a tenant's webhook, a rule, a laptop dry run as the CronJob sees, nsman doctor, a namespace stuck in Terminating (nsman explain, a sweep), expiry dates, idle previews (nsman touch), GitOps previews (an Application goes, its namespace follows; one deleted while its Application exists comes back, and nsman explain says so), windows, sleep and wake (a dry run --at, then a namespace asleep, woken by nsman wake, asleep again), more of a namespace asleep (a Flux HelmRelease suspended and a LoadBalancer parked, then brought back), idle from traffic (a real Prometheus: requests keep a preview awake, it sleeps once they stop, a request wakes it, Prometheus down keeps it awake), tell people first (a warning before a TTL, on the namespace's channel, its signed link pressed through nsman serve: a hold, and the namespace outlives its TTL) and freezes, tear down
	scripts/demo.sh

.PHONY: clean
clean: ## Remove build output (the binary cache stays)
	rm -rf bin .cluster

# The image's tag is the version without its "v": a release vX.Y.Z is the
# image ghcr.io/nsman/nsman:X.Y.Z, the chart's appVersion.
IMAGE ?= ghcr.io/nsman/nsman:$(patsubst v%,%,$(VERSION))
# The commit, for the image's org.opencontainers.image.revision label.
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# PLATFORMS=linux/amd64,linux/arm64 builds a multi-arch image with docker
# buildx. Such an image cannot be loaded into the classic image store: it
# stays in buildx's cache unless BUILDX_FLAGS says where it goes (--push, or
# --load where Docker uses the containerd image store).
PLATFORMS ?=
BUILDX_FLAGS ?=

.PHONY: image
image: ## Build the image ghcr.io/nsman/nsman:VERSION, without a leading v (IMAGE= to name it otherwise; PLATFORMS=linux/amd64,linux/arm64 for multi-arch with buildx); needs a running Docker engine
	@if ! docker info >/dev/null 2>&1; then \
		echo "make image: no container engine: 'docker info' failed (is Docker installed and its daemon running?)" >&2; exit 1; \
	fi
ifeq ($(PLATFORMS),)
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $(IMAGE) .
else
	@if ! docker buildx version >/dev/null 2>&1; then \
		echo "make image: PLATFORMS=$(PLATFORMS) needs docker buildx, and 'docker buildx version' failed" >&2; exit 1; \
	fi
	docker buildx build --platform $(PLATFORMS) --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $(IMAGE) $(BUILDX_FLAGS) .
endif

.PHONY: deploy
deploy: ## Apply deploy/ to the current kubectl context (OVERLAY=dry-run, webhook-signing, sharded, webhook-egress, notify or freeze for deploy/overlays/*)
	kubectl apply -k deploy/$(if $(OVERLAY),overlays/$(OVERLAY))
