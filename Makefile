# nsman's build, tests and local control plane. `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/nsman/nsman/cmd.version=$(VERSION)
CACHE := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/nsman

# Packages that need no control plane, and those that start one.
UNIT_PKGS = $(shell go list ./... | grep -v '/test/')
INTEGRATION_PKGS = ./test/cluster/... ./test/integration/... ./test/compat/... ./test/robust/...
E2E_PKGS = ./test/e2e/...
TOOL_MODULES = test/tools/kube test/tools/etcd test/tools/kwok test/tools/lint test/tools/pushgateway

STATICCHECK_VERSION = $(shell cd test/tools/lint && go list -m -f '{{.Version}}' honnef.co/go/tools)
STATICCHECK = $(CACHE)/staticcheck-$(STATICCHECK_VERSION)/staticcheck

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/nsman
	go build -ldflags '$(LDFLAGS)' -o bin/nsman ./cmd/nsman

.PHONY: control-plane
control-plane: ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and the Pushgateway into the user cache (once)
	test/tools/build.sh

.PHONY: test
test: lint test-unit fuzz test-integration test-e2e ## Everything CI runs: lint, unit, fuzz (briefly), integration and end-to-end tests

.PHONY: test-unit
test-unit: ## Unit tests (no control plane)
	go test -race -count=1 $(UNIT_PKGS)

FUZZTIME ?= 10s

.PHONY: fuzz
fuzz: ## Fuzz manifest parsing and evaluation for FUZZTIME (10s; e.g. FUZZTIME=10m)
	go test -run '^$$' -fuzz FuzzParseAndEvaluate -fuzztime $(FUZZTIME) ./policy

.PHONY: test-integration
test-integration: control-plane ## Tests against a real control plane
	go test -count=1 -timeout 20m $(INTEGRATION_PKGS)

.PHONY: test-e2e
test-e2e: control-plane ## End-to-end tests of the built commands
	go test -count=1 -timeout 20m $(E2E_PKGS)

.PHONY: test-long
test-long: control-plane ## Long robustness variants (NSMAN_LONG=1): more managers, kill points and fault rounds; minutes, not in make test
	NSMAN_LONG=1 go test -count=1 -timeout 60m -v ./test/robust/ ./test/compat/ | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|figures:'

.PHONY: docs
docs: ## Regenerate the flags reference in README.md from the commands
	go test ./cmd -run TestFlagsReferenceInREADME -update

.PHONY: bench
bench: control-plane ## Benchmarks: Go benchmarks of the unit packages, then 1,000 and 10,000 managers on a real API server (writes BENCHMARKS.md)
	@mkdir -p bin
	go test -run '^$$' -bench . -benchmem $(UNIT_PKGS) | tee bin/bench-unit.txt
	NSMAN_BENCH=1 NSMAN_BENCH_UNIT=$(CURDIR)/bin/bench-unit.txt go test -count=1 -run '^TestBenchmarks$$' -timeout 60m -v ./test/bench/

.PHONY: lint
lint: $(STATICCHECK) ## gofmt, go vet, staticcheck and go mod tidy
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	go vet ./...
	$(STATICCHECK) ./...
	go mod tidy -diff
	for m in $(TOOL_MODULES); do (cd $$m && go mod tidy -diff); done

$(STATICCHECK):
	cd test/tools/lint && go build -o $@ honnef.co/go/tools/cmd/staticcheck

.PHONY: cluster-up
cluster-up: control-plane ## Start a full control plane in the background; prints KUBECONFIG=<path> last
	@go build -o bin/nsman-cluster ./test/cluster/nsman-cluster
	@bin/nsman-cluster -dir .cluster up

.PHONY: cluster-down
cluster-down: ## Stop the control plane that cluster-up started
	@go build -o bin/nsman-cluster ./test/cluster/nsman-cluster
	@bin/nsman-cluster -dir .cluster down

.PHONY: demo
demo: build control-plane ## Start a control plane, run a workload in a namespace, delete it, tear down
	scripts/demo.sh

.PHONY: clean
clean: ## Remove build output (the binary cache stays)
	rm -rf bin .cluster

IMAGE ?= ghcr.io/nsman/nsman:$(VERSION)

.PHONY: image
image: ## Build the image ghcr.io/nsman/nsman:VERSION (IMAGE= to name it otherwise); needs a running Docker engine
	@if ! docker info >/dev/null 2>&1; then \
		echo "make image: no container engine: 'docker info' failed (is Docker installed and its daemon running?)" >&2; exit 1; \
	fi
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE) .

.PHONY: deploy
deploy: ## Apply deploy/ to the current kubectl context (OVERLAY=dry-run, webhook-signing, sharded or webhook-egress for deploy/overlays/*)
	kubectl apply -k deploy/$(if $(OVERLAY),overlays/$(OVERLAY))
