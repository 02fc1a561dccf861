PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check bench install clean browser test-torch test-matrix

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# pip compiles the installed modules' bytecode one file after another (40 CPU-s of the 63 s
# install on 2 cores); compileall spreads it over every core (the install: 56 s). A module that
# is not Python of this version (torch's own Python 3.12 test fixtures) is skipped, as pip does.
$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/python -m pip install --quiet --no-compile -c constraints.txt -e '.[dev,html,models,ray]'
	$(BIN)/python -c 'import compileall, sysconfig; compileall.compile_dir(sysconfig.get_path("purelib"), quiet=2, workers=0)'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/compilescope demo

test: $(STAMP) browser
	$(BIN)/python -m pytest -n 3 --dist loadfile --no-loadscope-reorder --durations=15

# The version matrix (not part of `make test`: each torch but the pinned one is a CUDA build of a
# few GB from PyPI, run on the CPU). `make test-torch TORCH=2.10.0` builds .venv-torch-2.10.0
# once and runs the compat-marked tests there; `make test-matrix` does every checked version,
# one after the other, and prints the table (README, "Supported torch versions").
TORCH_MATRIX := 2.6.0 2.7.0 2.8.0 2.10.0 2.12.0 2.13.0 2.14.1

test-torch:
	@[ -n "$(TORCH)" ] || { echo "usage: make test-torch TORCH=VERSION (checked: $(TORCH_MATRIX))" >&2; exit 2; }
	$(PYTHON) matrix/run.py $(TORCH)

test-matrix:
	@status=0; for v in $(TORCH_MATRIX); do $(PYTHON) matrix/run.py $$v || status=1; done; \
	  $(PYTHON) matrix/run.py --table; exit $$status

# The inner loop: the unit tests that start no process (no trial, no CLI process, no inductor);
# --no-processes fails a test that starts one unmarked (mark it `processes`).
check: $(STAMP)
	$(BIN)/python -m pytest tests/unit -m "not processes and not inductor" --no-processes -n 2 --dist loadfile \
	  --no-loadscope-reorder --durations=5

# Headless Chromium from Debian's packages for the browser tests, when missing and possible
# (root and apt-get); otherwise those tests skip with the reason.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { timeout 900 apt-get install -y -q chromium >/dev/null 2>&1 || \
	    { timeout 300 apt-get update -q >/dev/null 2>&1 && timeout 900 apt-get install -y -q chromium >/dev/null 2>&1; }; }; } || \
	  echo "chromium is not installed and could not be: the browser tests will skip"

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,bench,models,ray]'
	$(BIN)/python benchmarks/steady_vs_timer.py
	$(BIN)/python benchmarks/compile_attribution.py
	$(BIN)/python benchmarks/steady_overhead.py
	$(BIN)/python benchmarks/watch_overhead.py
	$(BIN)/python benchmarks/probe_overhead.py
	$(BIN)/python benchmarks/run_overhead.py
	$(BIN)/python benchmarks/guard_walk_cost.py
	$(BIN)/python benchmarks/ray_overhead.py --repeat 1
	$(BIN)/python benchmarks/advise_vs_matrix.py
	$(BIN)/python benchmarks/load_results.py
	$(BIN)/python benchmarks/cli_startup.py
	$(BIN)/python benchmarks/record_shapes_overhead.py
	$(BIN)/python benchmarks/forecast_vs_run.py
	$(BIN)/python benchmarks/verify_minilm.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache compilescope-results matrix/results
