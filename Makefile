# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test bench clean oracle oracle-if-go

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

# The main job on the example policy: compile policies/ into out/ and print the summary.
demo: setup
	$(BIN)/kueue-policy compile policies --out out

# kueue-oracle: Kueue's own scheduler run offline (oracle/README.md). `go mod download` also
# puts the Kueue module, whose CRDs the verify tests read, in the module cache.
ORACLE_BIN := oracle/bin/kueue-oracle
KUEUE_CRDS := clusterqueues cohorts localqueues resourceflavors workloadpriorityclasses workloads
oracle:
	cd oracle && go mod download && kueue_dir=$$(go list -m -f '{{.Dir}}' sigs.k8s.io/kueue) && mkdir -p crds && \
	  for crd in $(KUEUE_CRDS); do install -m 0644 "$$kueue_dir/config/components/crd/bases/kueue.x-k8s.io_$$crd.yaml" crds/; done && \
	  go build -trimpath -o bin/kueue-oracle .

# `make test` builds the oracle when Go is installed; without Go its tests skip with that reason.
oracle-if-go:
	@if command -v go >/dev/null 2>&1; then $(MAKE) --no-print-directory oracle; \
	else echo "go not on PATH: kueue-oracle not built, its tests will skip"; fi

# The whole suite (2 workers: this project's machines have 2 cores).
test: setup oracle-if-go
	$(BIN)/python -m pytest -n 2 -q

bench: setup
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
