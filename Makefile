# quotagate — run `make help` for the targets.

KUBE_VERSION   ?= v1.37.2
KWOK_VERSION   ?= v0.8.0
CONTROLLER_GEN_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION  ?= v2.15.0
KUEUE_VERSION  ?= v0.17.0

ROOT      := $(abspath .)
BIN       := $(ROOT)/bin
KUBE_BIN  := $(BIN)/kube-$(KUBE_VERSION)
KWOK_BIN  := $(BIN)/kwok-$(KWOK_VERSION)
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT  := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
KUEUE_MANAGER  := $(BIN)/kueue-$(KUEUE_VERSION)/manager

# The local control plane's binaries, keyed by version so a bump rebuilds.
KUBE_BINARIES := $(KUBE_BIN)/kube-apiserver $(KUBE_BIN)/kube-scheduler $(KUBE_BIN)/kube-controller-manager $(KUBE_BIN)/etcd
KWOK_BINARIES := $(KWOK_BIN)/kwok $(KWOK_BIN)/stages

export QUOTAGATE_KUBE_BIN := $(KUBE_BIN)
export QUOTAGATE_KWOK_BIN := $(KWOK_BIN)

# PROGRESS runs a long step and says every 15 s which step of how many it is and how long
# it has run (hack/progress/progress.sh): a cold make tools compiles for about 15 minutes.
PROGRESS := bash $(ROOT)/hack/progress/progress.sh
# TOOL_NAMES are the local control plane's binaries in the order make tools builds them,
# for its "[n/6] name" labels.
TOOL_NAMES := kube-apiserver kube-scheduler kube-controller-manager etcd kwok stages
tool_label = [$(firstword $(foreach i,$(shell seq $(words $(TOOL_NAMES))),$(if $(filter $1,$(word $i,$(TOOL_NAMES))),$i)))/$(words $(TOOL_NAMES))] $1

# Everything compiles as the release does (no cgo, -trimpath): then `make test`, the
# binaries the e2e tests install, the image and the release share one compile of each
# package in Go's build cache instead of two. On a machine with nothing built that is a
# whole compile of the dependency graph (kube-apiserver's libraries, Helm, ...) saved.
export CGO_ENABLED ?= 0
export GOFLAGS ?= -trimpath

# One version for the binaries, the image tag and the chart's appVersion: by default the
# chart's appVersion; `make release VERSION=vX.Y.Z` sets it for a release.
VERSION  ?= $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' charts/quotagate/Chart.yaml)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
GO_LDFLAGS := -s -w -X github.com/quotagate/quotagate/internal/version.version=$(VERSION) -X github.com/quotagate/quotagate/internal/version.revision=$(REVISION)

GO_TEST_FLAGS ?= -count=1
# SCALE_SIZES are the gated pod counts make bench-scale measures, ascending.
SCALE_SIZES ?= 1000,10000,50000,100000
TEST_TIMEOUT  ?= 30m

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code (zz_generated.*).
	cd api && $(CONTROLLER_GEN) object paths=./...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs, RBAC and webhook manifests into config/ and the chart.
	cd api && $(CONTROLLER_GEN) crd paths=./v1alpha1/... output:crd:artifacts:config=$(ROOT)/config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=quotagate-manager paths=./pkg/quota/... output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) webhook paths=./pkg/admission/... output:webhook:artifacts:config=config/webhook
	go run ./hack/chartsync
	go run ./hack/chartdocs

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet (the root module and the api module).
	go vet ./...
	cd api && go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run the pinned golangci-lint (the root module and the api module).
	$(GOLANGCI_LINT) run ./...
	cd api && $(GOLANGCI_LINT) run ./...

.PHONY: verify
verify: generate manifests $(GOLANGCI_LINT) ## Regenerate, check formatting, vet, check that the core parts own their fields (pkg/quota/parts_fields_test.go) and that the core's packages import only down their layers (hack/layers), and lint; fail on any diff, a tracked binary or a non-test file importing testing.
	bash hack/check-tracked-files.sh
	bash hack/check-test-imports.sh
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	go vet ./...
	cd api && go vet ./...
	go test ./pkg/quota -run '^TestPartsOwnTheirFields$$'
	go run ./hack/layers
	$(GOLANGCI_LINT) run ./...
	cd api && $(GOLANGCI_LINT) run ./...
	cd api && go mod tidy -diff
	@git diff --exit-code -- api config charts || { echo "generated files are out of date: run 'make generate manifests' and commit"; exit 1; }

.PHONY: test
test: tools browser ## Run unit tests, the tests against a real local control plane (and a headless Chromium), and a short fuzz run.
	go test $(GO_TEST_FLAGS) -timeout $(TEST_TIMEOUT) ./...
	cd api && go test $(GO_TEST_FLAGS) -timeout $(TEST_TIMEOUT) ./...
	$(MAKE) --no-print-directory fuzz FUZZ_TARGETS='$(TEST_FUZZ_TARGETS)' FUZZ_TIME=$(TEST_FUZZ_TIME)

# FUZZ_TARGETS are package:FuzzFunc pairs; make fuzz runs each for FUZZ_TIME, and make
# test runs TEST_FUZZ_TARGETS (the accounting's) for TEST_FUZZ_TIME. Their seed corpora
# are checked in under each package's testdata/fuzz, and every go test runs them.
TEST_FUZZ_TARGETS := ./pkg/quota/internal/amount:FuzzOf ./pkg/quota/internal/amount:FuzzSums \
	./pkg/quota:FuzzPodUsage ./pkg/quota:FuzzLedger
FUZZ_TARGETS ?= $(TEST_FUZZ_TARGETS) \
	./pkg/gates:FuzzAddOps ./pkg/gates:FuzzUngatePatch ./pkg/gates:FuzzUngatePatchOnFlavor
FUZZ_TIME ?= 2m
TEST_FUZZ_TIME ?= 8s

.PHONY: fuzz
fuzz: ## Fuzz amount parsing and sums, pod usage, the ledger and the gate patches, FUZZ_TIME each (2m; make test runs 8s each).
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$fn in $$pkg for $(FUZZ_TIME)"; \
		go test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZ_TIME) $$pkg || exit 1; done

# CHROMIUM is the browser the UI's tests drive (pkg/ui): Debian's package.
CHROMIUM ?= /usr/bin/chromium

.PHONY: browser
browser: ## Install Debian's Chromium for the UI's browser tests (apt-get, as root), unless $(CHROMIUM) is there.
	@test -x $(CHROMIUM) || { apt-get update && apt-get install -y --no-install-recommends chromium; }

.PHONY: ui-screenshots
ui-screenshots: tools browser ## Regenerate docs/ui/*.png (budget tree, a namespace's page, queue, pod page) in the browser, on a local control plane.
	QUOTAGATE_UI_SCREENSHOTS=$(ROOT)/docs/ui go test -count=1 -run 'TestUIShowsBudgetsAndQueueLive|TestUITenantOpensOnItsQueue' ./pkg/ui/

.PHONY: e2e
e2e: tools ## Run the end-to-end user journey (chart, webhook, manager) on the local control plane.
	go test $(GO_TEST_FLAGS) -timeout $(TEST_TIMEOUT) -tags e2e -v ./e2e/...

SOAK ?= 5m

.PHONY: soak
soak: tools ## Run two teams' steady Jobs under one parent for $(SOAK) (SOAK=10m) and count the evictions of reclaim: it must stay at the first reclaim.
	QUOTAGATE_SOAK=$(SOAK) go test -count=1 -timeout $(TEST_TIMEOUT) -run 'TestSteadyTwoTeamsDoNotThrash' -v ./pkg/quota/controller/

.PHONY: bench
bench: tools ## Measure quotagate against its baselines on a local control plane, and with estimates on against off; write docs/benchmarks.md and bench/figures/benchmarks.json (~19 min).
	go run ./bench

.PHONY: bench-flavors
bench-flavors: tools ## Measure figures 1 and 2 only, each beside its arm with the budget split over 2 Flavors, 5 repetitions; write docs/benchmarks-flavors.md and bench/figures/benchmarks-flavors.json (~5 min).
	go run ./bench -figures 1,2 -reps 5 -eventless-reps 0 -out docs/benchmarks-flavors.md -json bench/figures/benchmarks-flavors.json

.PHONY: bench-windows
bench-windows: tools ## Measure figure 9 only: a window's edge to the first ungate, beside the same raise by hand; write docs/benchmarks-windows.md and bench/figures/benchmarks-windows.json (~3 min).
	go run ./bench -figures 9 -out docs/benchmarks-windows.md -json bench/figures/benchmarks-windows.json

# ESTIMATES_ARGS passes flags to make bench-estimates' run, e.g. a small one:
# ESTIMATES_ARGS='-estimates-pods 40 -estimates-scale 0.4 -estimates-warm 3'.
ESTIMATES_ARGS ?=
.PHONY: bench-estimates
bench-estimates: tools ## Replay three workloads of Jobs with known run times through full Budgets and judge the manager's estimated starts against a naive baseline and an oracle; write docs/benchmarks-estimates.md and bench/estimates/benchmarks-estimates.json (~40 min; ESTIMATES_ARGS for a small run).
	go run ./bench -estimates $(ESTIMATES_ARGS)

.PHONY: bench-scale
bench-scale: tools ## Measure quotagate with up to 100,000 gated pods in 1,000 budgets; write docs/benchmarks-scale.md and bench/scale/benchmarks-scale.json (SCALE_SIZES=1000,10000 for a quick run).
	go run ./bench -scale -sizes $(SCALE_SIZES)

.PHONY: bench-peers
PEERS_ARGS ?=

bench-peers: tools $(KUEUE_MANAGER) ## Measure quotagate beside Kueue $(KUEUE_VERSION) (plain pods) and the bare client in one run; write docs/benchmarks-peers.md and bench/peers/benchmarks-peers.json (PEERS_ARGS='-peers-scale 50' for a small run).
	go run ./bench -peers -kueue $(KUEUE_MANAGER) -kueue-version $(KUEUE_VERSION) $(PEERS_ARGS)

.PHONY: bench-unit
bench-unit: ## Run the in-process Go benchmarks (admission core, webhook handler, gate patches).
	go test -run '^$$' -bench . -benchmem ./pkg/...

##@ Build

.PHONY: version
version: ## Print the version the build targets stamp into the binaries.
	@echo $(VERSION)

.PHONY: build
build: ## Build the quotagate binaries into bin/ (webhook, manager, kubectl-quotagate and its completion kubectl_complete-quotagate).
	CGO_ENABLED=0 go build -trimpath -ldflags '$(GO_LDFLAGS)' -o $(BIN)/ ./cmd/webhook ./cmd/manager ./cmd/kubectl-quotagate ./cmd/kubectl_complete-quotagate

# The image, built with no Docker engine (tools/ociimage; docs/images.md): an OCI layout
# directory and a tar of it (an oci-archive), at paths `make release` relies on. The created
# time is the commit's, or SOURCE_DATE_EPOCH, so one commit always gives the same digests.
IMAGE_LAYOUT  := _output/image/oci
IMAGE_ARCHIVE := _output/image/quotagate-$(VERSION).oci.tar

.PHONY: image
image: ## Build the linux/amd64+arm64 image, no Docker: OCI layout _output/image/oci and tar _output/image/quotagate-$(VERSION).oci.tar.
	go run ./hack/image --version '$(VERSION)' --revision '$(REVISION)' --ldflags '$(GO_LDFLAGS)' \
		--bin-dir _output/image/bin --layout $(IMAGE_LAYOUT) --archive $(IMAGE_ARCHIVE)

##@ Deploy

# IMG is the image `make deploy` pushes and installs: registry/repository[:tag] (the tag
# defaults to VERSION). LOAD=kind or LOAD=k3d loads it into that cluster's nodes from an
# OCI archive instead of pushing it (KIND_CLUSTER / K3D_CLUSTER name the cluster).
# DEPLOY_FLAGS go to hack/deploy: --values my.yaml, --set key=value, --namespace,
# --release, --context, --insecure, --wait=false.
IMG ?=
LOAD ?=
DEPLOY_FLAGS ?=
DEPLOY_CLUSTER = $(if $(filter kind,$(LOAD)),$(KIND_CLUSTER),$(if $(filter k3d,$(LOAD)),$(K3D_CLUSTER)))

.PHONY: deploy
deploy: deploy-img image ## Build the image, push it to IMG=registry/repo:tag (LOAD=kind|k3d: load it into that cluster) and install the chart running it with the current kubeconfig.
	go run ./hack/deploy --image '$(IMG)' --default-tag '$(VERSION)' --layout $(IMAGE_LAYOUT) \
		$(if $(LOAD),--load '$(LOAD)' --archive _output/image/deploy.oci.tar $(if $(DEPLOY_CLUSTER),--cluster '$(DEPLOY_CLUSTER)')) $(DEPLOY_FLAGS)

.PHONY: undeploy
undeploy: ## Uninstall the release make deploy installed (its pre-delete hook releases every gated pod first; DEPLOY_FLAGS=--namespace ... as for deploy).
	go run ./hack/deploy --uninstall $(DEPLOY_FLAGS)

.PHONY: deploy-img
deploy-img:
	@test -n '$(IMG)' || { echo "make deploy needs IMG=registry/repository[:tag], e.g. IMG=ghcr.io/me/quotagate:dev (LOAD=kind for a kind cluster)"; exit 1; }

##@ Release

# RELEASE_PLATFORMS (os/arch,...) narrows the plugin's platforms, e.g. for a quick dry
# run; a release builds all four.
# The release ships the image `make image` builds. VERSION is checked first, so a bad one
# fails before anything is built (hack/release checks it again, as semver).
.PHONY: release
release: release-version image ## Write the release for VERSION=vX.Y.Z to _output/release/ (chart, CRDs, install.yaml, kubectl plugin, krew manifest, image, their SBOMs, checksums, in-toto provenance).
	go run ./hack/release -version '$(VERSION)' -revision '$(REVISION)' -out _output/release $(if $(RELEASE_PLATFORMS),-platforms '$(RELEASE_PLATFORMS)')

.PHONY: release-version
release-version:
	@echo '$(VERSION)' | grep -Eq '^v[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?$$' || { echo "VERSION=$(VERSION): must be vMAJOR.MINOR.PATCH, as in v0.2.0"; exit 1; }

##@ Local control plane

.PHONY: tools
tools: $(KUBE_BINARIES) $(KWOK_BINARIES) ## Build the local control plane's binaries (cold ~15 min, then cached in bin/).

.PHONY: cluster-up
cluster-up: tools ## Start a local control plane (etcd, apiserver, scheduler, controller-manager, kwok) and print its kubeconfig.
	go run ./hack/localcluster up

.PHONY: cluster-down
cluster-down: ## Stop the local control plane started by cluster-up.
	go run ./hack/localcluster down

# DEMO_BIN holds what make demo builds, with the flags above (the build cache's): the
# demo, the webhook, the manager and the kubectl plugin. make demo KEEP=1 after make demo
# finds them up to date and builds nothing.
DEMO_BIN := _output/demo-bin
KEEP ?=

.PHONY: demo
demo: tools ## Start the local control plane, install quotagate and watch a burst of Jobs drain through a Budget (KEEP=1: leave it running for kubectl, until Ctrl-C).
	@$(PROGRESS) 'demo: compiling the demo, webhook, manager and kubectl plugin into $(DEMO_BIN)' \
		go build -ldflags '$(GO_LDFLAGS)' -o $(DEMO_BIN)/ ./hack/demo ./cmd/webhook ./cmd/manager ./cmd/kubectl-quotagate
	$(DEMO_BIN)/demo --bin-dir $(DEMO_BIN) $(if $(KEEP),--keep)

KUBE_LDFLAGS := -s -w \
	-X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=$(word 2,$(subst ., ,$(subst v,v ,$(KUBE_VERSION)))) \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))) \
	-X k8s.io/component-base/version.gitTreeState=clean \
	-X k8s.io/client-go/pkg/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/client-go/pkg/version.gitMajor=$(word 2,$(subst ., ,$(subst v,v ,$(KUBE_VERSION)))) \
	-X k8s.io/client-go/pkg/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION)))

$(KUBE_BIN)/kube-%: hack/tools/kube/go.mod
	@mkdir -p $(KUBE_BIN)
	@cd hack/tools/kube && $(PROGRESS) '$(call tool_label,kube-$*) into $(KUBE_BIN)' \
		go build -trimpath -ldflags '$(KUBE_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-$*

$(KUBE_BIN)/etcd: hack/tools/kube/go.mod
	@mkdir -p $(KUBE_BIN)
	@cd hack/tools/kube && $(PROGRESS) '$(call tool_label,etcd) into $(KUBE_BIN)' \
		go build -trimpath -ldflags '-s -w' -o $@ go.etcd.io/etcd/server/v3

$(KWOK_BIN)/kwok: hack/tools/kwok/go.mod
	@mkdir -p $(KWOK_BIN)
	@cd hack/tools/kwok && $(PROGRESS) '$(call tool_label,kwok) into $(KWOK_BIN)' \
		go build -trimpath -ldflags '-s -w' -o $@ sigs.k8s.io/kwok/cmd/kwok

# kwok's stage files ship in its module: copy them next to the binary (without the
# module's Go test files, which `go test ./...` would otherwise pick up).
$(KWOK_BIN)/stages: hack/tools/kwok/go.mod
	@echo "==> $(call tool_label,stages): kwok's stage files into $@"
	@rm -rf $@.tmp && mkdir -p $@.tmp
	cp -r "$$(cd hack/tools/kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage/." $@.tmp/
	chmod -R u+w $@.tmp && find $@.tmp -name '*.go' -delete
	rm -rf $@ && mv $@.tmp $@

# Kueue's manager for `make bench-peers`, built from its Go module like the control plane.
$(KUEUE_MANAGER): hack/tools/kueue/go.mod
	@mkdir -p $(dir $@)
	cd hack/tools/kueue && go build -trimpath -ldflags '-s -w' -o $@ sigs.k8s.io/kueue/cmd/kueue

$(CONTROLLER_GEN): hack/tools/gen/go.mod
	cd hack/tools/gen && go build -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen

$(GOLANGCI_LINT): hack/tools/lint/go.mod
	cd hack/tools/lint && go build -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint
