# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test bench clean browser

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

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

# The whole suite (2 workers: this project's machines have 2 cores).
test: setup browser
	$(BIN)/python -m pytest -n 2 -q

bench: setup
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
