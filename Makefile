# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# actionlint (lints .github/ in the tests) is a Go program; no PyPI wheel ships its binary, so it
# is built from the Go module proxy when Go is present (the tests say why they skip otherwise).
ACTIONLINT_VERSION := v1.7.12
$(BIN)/actionlint: | $(STAMP)
	@if command -v go >/dev/null 2>&1; then \
	  GOBIN="$(abspath $(BIN))" go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION); \
	else echo "go not found: the actionlint tests will be skipped"; fi

setup: $(STAMP) $(BIN)/actionlint

# The main job on the example policy: compile policies/ into out/ and print the summary.
demo: setup
	$(BIN)/kueue-policy compile policies --out out

# The whole suite (2 workers: this project's machines have 2 cores).
test: setup
	$(BIN)/python -m pytest -n 2 -q

bench: setup
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
