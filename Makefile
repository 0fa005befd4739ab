# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test bench clean browser mermaid differential differential-tas oracle oracle-if-go speedups sandbox

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,speedups,distributed]'
	touch $(STAMP)

# actionlint (lints .github/ in the tests) is a Go program; no PyPI wheel ships its binary, so it
# is built from the Go module proxy when Go is present (the tests say why they skip otherwise).
ACTIONLINT_VERSION := v1.7.12
$(BIN)/actionlint: | $(STAMP)
	@if command -v go >/dev/null 2>&1; then \
	  GOBIN="$(abspath $(BIN))" go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION); \
	else echo "go not found: the actionlint tests will be skipped"; fi

# The engine's hot modules compiled with Cython (compiler/speedups): checked whenever a source,
# a declaration (.pxd) or a folder of the package changed (a .pxd added or removed changes its
# folder), and rebuilt when one of the compiled modules' .py or .pxd is not the one compiled.
# A failed build (no C compiler, a Cython error) fails `make` with its error, leaving the last
# good build in place; the engine then runs as Python until the next build succeeds.
COMPILED := compiler/_compiled/manifest.json
COMPILED_FROM := $(shell find compiler -path compiler/_compiled -prune -o \( -name '*.py' -o -name '*.pxd' \
                   -o -type d ! -name __pycache__ \) -print)
$(COMPILED): $(COMPILED_FROM) | $(STAMP)
	@$(BIN)/python -m compiler.speedups build --if-stale
speedups: $(COMPILED)

setup: $(STAMP) $(BIN)/actionlint $(COMPILED)

# The main job on the example policy: compile policies/ into out/ and print the summary.
demo: setup
	$(BIN)/kueue-policy compile policies --out out

# Chromium for the browser test of `simulate --html`: Debian's package, installed when this runs
# as root with apt-get (CI, fresh machines); elsewhere that one test says chromium is missing.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	    echo "make: chromium not installed; the browser test will be skipped"; }

# mermaid-cli renders the Mermaid charts of REPORT.md and the pull request body (quota tree,
# what-if) in the tests, as GitHub and GitLab would. It runs in the system's Chromium, so the
# Chromium puppeteer would download is skipped; it lives in the user's cache (500 MB), shared by
# every clone of this project. Without npm that test says mermaid-cli is missing.
MERMAID_CLI_VERSION := 11.17.0
MERMAID_CLI_DIR     := $(HOME)/.cache/kueue-policy/mermaid-cli-$(MERMAID_CLI_VERSION)
mermaid:
	@test -x "$(MERMAID_CLI_DIR)/node_modules/.bin/mmdc" || \
	  { command -v npm >/dev/null 2>&1 && mkdir -p "$(MERMAID_CLI_DIR)" && \
	    PUPPETEER_SKIP_DOWNLOAD=1 npm install --silent --no-audit --no-fund --prefix "$(MERMAID_CLI_DIR)" \
	      @mermaid-js/mermaid-cli@$(MERMAID_CLI_VERSION) >/dev/null; } || \
	  echo "make: npm not found or failed; the mermaid-cli rendering test will be skipped"

# kueue-oracle: Kueue's own scheduler run offline (oracle/README.md). `go mod download` also
# puts the Kueue module, whose CRDs the verify tests read, in the module cache.
ORACLE_BIN := oracle/bin/kueue-oracle
KUEUE_CRDS := clusterqueues cohorts localqueues resourceflavors topologies workloadpriorityclasses workloads
# The job kinds' CRDs (their OpenAPI defaults are what the API server applies before Kueue's
# integrations read a job): module:path, from the modules Kueue depends on (versions in go.sum).
JOB_CRDS := \
  sigs.k8s.io/jobset:config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml \
  github.com/kubeflow/training-operator:manifests/base/crds/kubeflow.org_pytorchjobs.yaml \
  github.com/kubeflow/training-operator:manifests/base/crds/kubeflow.org_tfjobs.yaml \
  github.com/kubeflow/training-operator:manifests/base/crds/kubeflow.org_xgboostjobs.yaml \
  github.com/kubeflow/training-operator:manifests/base/crds/kubeflow.org_paddlejobs.yaml \
  github.com/kubeflow/training-operator:manifests/base/crds/kubeflow.org_jaxjobs.yaml \
  github.com/kubeflow/mpi-operator:manifests/base/kubeflow.org_mpijobs.yaml \
  github.com/ray-project/kuberay/ray-operator:config/crd/bases/ray.io_rayjobs.yaml \
  github.com/ray-project/kuberay/ray-operator:config/crd/bases/ray.io_rayclusters.yaml \
  github.com/kubeflow/trainer/v2:manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml \
  github.com/kubeflow/trainer/v2:manifests/base/crds/trainer.kubeflow.org_trainingruntimes.yaml \
  github.com/kubeflow/trainer/v2:manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml \
  sigs.k8s.io/lws:config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml
# `go vet` runs with every build: it reuses the build's cache (no -trimpath, which would give
# vet cache entries of its own: three minutes from cold instead of under one), so a later
# `go vet ./...` in oracle/ answers at once.
oracle:
	cd oracle && go mod download && kueue_dir=$$(go list -m -f '{{.Dir}}' sigs.k8s.io/kueue) && mkdir -p crds && \
	  for crd in $(KUEUE_CRDS); do install -m 0644 "$$kueue_dir/config/components/crd/bases/kueue.x-k8s.io_$$crd.yaml" crds/; done && \
	  for crd in $(JOB_CRDS); do mod_dir=$$(go list -m -f '{{.Dir}}' "$${crd%%:*}") && \
	    install -m 0644 "$$mod_dir/$${crd#*:}" crds/ || exit 1; done && \
	  go build -o bin/kueue-oracle . && go vet ./...

# The sandbox (`kueue-policy sandbox`): etcd, kube-apiserver and Kueue's own manager, built from
# the Go module proxy in oracle/sandbox/ (a module of its own, at the versions Kueue's go.mod
# selects, so the oracle's build cache serves most of it). kube-apiserver reports the Kubernetes
# version of its module (clients, Kueue among them, parse it); Kueue's manager its release.
# `make test` builds it before the oracle, one after the other (-j1: two go builds side by side
# would each compile the packages they share): it compiles a superset of the oracle's packages,
# so the oracle's build then mostly reads the build cache.
# Kueue's CRDs and webhook configurations are rendered from the Kueue module's own
# config/components/ with kustomize, and the job kinds' CRDs copied beside them.
SANDBOX := oracle/sandbox
sandbox:
	cd $(SANDBOX) && go mod download && \
	  k8s=$$(go list -m -f '{{.Version}}' k8s.io/kubernetes) && kueue=$$(go list -m -f '{{.Version}}' sigs.k8s.io/kueue) && \
	  major=$$(echo "$$k8s" | cut -d. -f1 | tr -d v) && minor=$$(echo "$$k8s" | cut -d. -f2) && \
	  go build -ldflags "-X k8s.io/component-base/version.gitVersion=$$k8s \
	    -X k8s.io/component-base/version.gitMajor=$$major -X k8s.io/component-base/version.gitMinor=$$minor \
	    -X k8s.io/component-base/version.gitTreeState=clean -X sigs.k8s.io/kueue/pkg/version.GitVersion=$$kueue" \
	    -o bin/ ./cmd/etcd k8s.io/kubernetes/cmd/kube-apiserver sigs.k8s.io/kueue/cmd/kueue && \
	  kueue_dir=$$(go list -m -f '{{.Dir}}' sigs.k8s.io/kueue) && mkdir -p manifests/jobs && \
	  kubectl kustomize "$$kueue_dir/config/components/crd" > manifests/kueue-crds.yaml.tmp && \
	  kubectl kustomize "$$kueue_dir/config/components/webhook" > manifests/kueue-webhooks.yaml.tmp && \
	  mv manifests/kueue-crds.yaml.tmp manifests/kueue-crds.yaml && \
	  mv manifests/kueue-webhooks.yaml.tmp manifests/kueue-webhooks.yaml && \
	  for crd in $(JOB_CRDS); do mod_dir=$$(go list -m -f '{{.Dir}}' "$${crd%%:*}") && \
	    install -m 0644 "$$mod_dir/$${crd#*:}" manifests/jobs/ || exit 1; done

# `make test` builds the oracle when Go is installed; without Go its tests skip with that reason.
oracle-if-go:
	@if command -v go >/dev/null 2>&1; then $(MAKE) --no-print-directory -j1 sandbox oracle; \
	else echo "go not on PATH: kueue-oracle and the sandbox not built, their tests will skip"; fi

# The whole suite (2 workers: this project's machines have 2 cores).
# Chromium (apt), mermaid-cli (npm) and the oracle (Go) are installed side by side: two wait on
# the network while the third builds.
test: setup
	@$(MAKE) --no-print-directory -j 3 browser mermaid oracle-if-go
	MERMAID_CLI_DIR="$(MERMAID_CLI_DIR)" $(BIN)/python -m pytest -n 2 -q

# N random Kueue worlds from SEED through the Python engine and Kueue's own scheduler
# (kueue-oracle, built by `make oracle`); the last line is `differential: K/N worlds agree`.
# JOBS=2 compares worlds in two processes; SHRINK=n shrinks at most n disagreements (0: none).
# TAS=1: Topology Aware Scheduling worlds (Topologies, Nodes, every TAS request form) instead,
# comparing topologyAssignment and Kueue's reason too. A world Kueue itself answers more than
# one way, the engine's answer among them, agrees (listed as `Kueue varies`); STRICT=1 counts it.
SEED   ?= 1
N      ?= 300
ORACLE ?= oracle/bin/kueue-oracle
JOBS   ?= 1
SHRINK ?= 20
differential: setup
	@test -x $(ORACLE) || { echo "differential: $(ORACLE) not found: build it with 'make oracle' (needs go on PATH)" >&2; exit 2; }
	cd tests && ../$(BIN)/python -m differential --seed $(SEED) -n $(N) --oracle $(abspath $(ORACLE)) --jobs $(JOBS) --max-shrink $(SHRINK) $(if $(TAS),--tas-worlds) $(if $(STRICT),--strict)

# N random topology placement worlds from SEED: compiler.evaluator.topology against Kueue's TAS.
differential-tas: setup
	@test -x $(ORACLE) || { echo "differential: $(ORACLE) not found: build it with 'make oracle' (needs go on PATH)" >&2; exit 2; }
	cd tests && ../$(BIN)/python -m differential --tas --seed $(SEED) -n $(N) --oracle $(abspath $(ORACLE))

bench: setup
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info compiler/_compiled
