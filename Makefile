# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test bench clean differential

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

# The main job on the example policy: compile policies/ into out/ and print the summary.
demo: setup
	$(BIN)/kueue-policy compile policies --out out

# The whole suite (2 workers: this project's machines have 2 cores).
test: setup
	$(BIN)/python -m pytest -n 2 -q

# N random Kueue worlds from SEED through the Python engine and Kueue's own scheduler
# (kueue-oracle, built by `make oracle`); the last line is `differential: K/N worlds agree`.
# JOBS=2 compares worlds in two processes; SHRINK=n shrinks at most n disagreements (0: none).
SEED   ?= 1
N      ?= 300
ORACLE ?= oracle/bin/kueue-oracle
JOBS   ?= 1
SHRINK ?= 20
differential: setup
	@test -x $(ORACLE) || { echo "differential: $(ORACLE) not found: build it with 'make oracle' (needs go on PATH)" >&2; exit 2; }
	cd tests && ../$(BIN)/python -m differential --seed $(SEED) -n $(N) --oracle $(abspath $(ORACLE)) --jobs $(JOBS) --max-shrink $(SHRINK)

bench: setup
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
