# The course's commands. A fresh clone needs only `make lab` or `make test`:
# both create the virtual environment in .venv first if it is missing or stale.
#
#   make lab         set up, then open the course in JupyterLab
#   make test        set up, then run every test (what CI runs)
#   make check       one-step check of a learner's machine before a workshop
#   make wheels WHEELS=DIR   download every wheel the course installs into DIR (with a network)
#                            [WHEELS_PY=3.12: for Linux x86-64 and that Python, from any machine]
#   make offline WHEELS=DIR  set up .venv from those wheels alone, with no network
#   make results FOLDER=DIR  which exercises each learner passed (tools/collect_results.py)
#   make site        build the course as a static website in build/site (slides in build/site/slides)
#   make exercises   regenerate notebooks/ from solutions/
#   make solutions   re-run every solution notebook in place, then regenerate notebooks/
#   make lock        re-resolve requirements.txt into requirements.lock (every supported Python)
#   make versions    resolve the lock for every other supported Python found on this machine
#   make bench       measure the recipes' speed (ratios; not part of the tests)

# The course runs on Python 3.11, 3.12 and 3.13: TensorFlow 2.21 ships wheels for 3.10-3.13,
# and Keras 3.15, whose behaviour the chapters show, needs 3.11 or newer.
SUPPORTED_PYTHONS := 3.11 3.12 3.13
is_supported = $(1) -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' >/dev/null 2>&1
# The first supported interpreter among python3, python3.13, python3.12, python3.11.
ifndef PYTHON
PYTHON := $(shell for p in python3 python3.13 python3.12 python3.11; do \
	$(call is_supported,$$p) && { echo $$p; break; }; done)
endif

VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP := $(BIN)/python -m pip --disable-pip-version-check
LOCK := requirements.lock
WHEELS ?=
WHEELS_FOR ?=
WHEELS_PY ?=
# Every manylinux tag the lock's Linux x86-64 wheels carry (TensorFlow 2.21: manylinux_2_27,
# onnxruntime: manylinux_2_28, others 2_17/2014, 2_5/1): pip matches --platform exactly, it does
# not widen one tag to the older ones, so each is named.
LINUX_X86_64_TAGS := manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 \
	manylinux2014_x86_64 manylinux_2_5_x86_64 manylinux1_x86_64
WHEELS_PY_FOR := $(if $(WHEELS_PY),--python-version $(WHEELS_PY) $(addprefix --platform ,$(LINUX_X86_64_TAGS)))
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg
NBCONVERT_EXECUTE := $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	--ExecutePreprocessor.timeout=1200 --ExecutePreprocessor.record_timing=False
TOOLS := build/tools
UV := $(TOOLS)/bin/uv

.PHONY: setup lab test test-units test-solutions test-exercises check site exercises solutions \
	wheels offline results lock versions bench clean

setup: $(STAMP)

# The checks every route into .venv makes first: a supported Python, then .venv created with it.
define make_venv
	@test -n "$(PYTHON)" || { \
		echo "The course needs Python 3.11, 3.12 or 3.13 (TensorFlow 2.21 with Keras 3.15)."; \
		echo "Found: $$(python3 --version 2>&1 || echo 'no python3')."; \
		echo "Install one (python.org, your package manager, or 'pyenv install 3.12'), then run"; \
		echo "    make $(or $(MAKECMDGOALS),setup) PYTHON=python3.12"; \
		exit 1; }
	@$(call is_supported,$(PYTHON)) || { \
		echo "PYTHON=$(PYTHON) is $$($(PYTHON) --version 2>&1); the course needs 3.11, 3.12 or 3.13."; \
		exit 1; }
	@test -x $(BIN)/python || { echo "Creating $(VENV) with $$($(PYTHON) --version)"; $(PYTHON) -m venv $(VENV); }
endef

$(STAMP): $(LOCK) pyproject.toml
	$(make_venv)
	$(PIP) install --quiet -r $(LOCK)
	$(PIP) install --quiet --no-deps -e .
	@touch $(STAMP)

# The offline route, for a room without a network (a folder of wheels on a USB stick).
# `make wheels` downloads every package of the lock as a wheel, setuptools and wheel included
# (they are in the lock: the course's own package is built with them); the wheels fit the
# operating system and Python version of the machine that downloads them, or those named in
# WHEELS_FOR (pip download's --platform/--python-version options: one operating system per run,
# every tag of it with a repeated --platform), or Linux x86-64 with the Python named in WHEELS_PY.
# `make offline` creates .venv if it is missing and installs from that folder alone: --no-index,
# and the course's own package without build isolation (which would ask the network for
# setuptools), so that `make check` and `make lab` then find .venv ready and ask for nothing.
wheels:
	@test -n "$(WHEELS)" || { echo "Name the folder to download into: make wheels WHEELS=/path/to/wheels"; exit 1; }
	$(or $(PYTHON),python3) -m pip download --disable-pip-version-check --only-binary=:all: \
		$(WHEELS_PY_FOR) $(WHEELS_FOR) --dest $(WHEELS) -r $(LOCK)

offline:
	@test -d "$(WHEELS)" || { echo "Name the folder of wheels (made by make wheels): make offline WHEELS=/path/to/wheels"; exit 1; }
	$(make_venv)
	$(PIP) install --quiet --no-index --find-links $(WHEELS) -r $(LOCK)
	$(PIP) install --quiet --no-index --find-links $(WHEELS) --no-build-isolation --no-deps -e .
	@touch $(STAMP)

# Jupyter refuses to start as root unless told to; containers often run as root.
LAB_FLAGS := $(if $(filter 0,$(shell id -u)),--allow-root)

# The address `make lab` prints opens chapter 00 too when no browser opens (WSL, a remote machine,
# a container): JupyterLab prints its LabApp.default_url, not the file named after it.
# The file browser hides what builds write (build/, the package's *.egg-info) beside Jupyter's
# own defaults (a repository's jupyter_server_config.json is not read: it must be flags).
LAB_START := /lab/tree/notebooks/00_start_here.ipynb
LAB_HIDE := ["__pycache__","*.pyc","*.pyo",".DS_Store","*.so","*.dylib","*~","build","*.egg-info"]

lab: $(STAMP)
	$(BIN)/jupyter lab $(LAB_FLAGS) --ServerApp.root_dir=. --LabApp.default_url=$(LAB_START) \
		'--ContentsManager.hide_globs=$(LAB_HIDE)' notebooks/00_start_here.ipynb

# Which exercises each learner passed, from their saved notebooks (tools/collect_results.py):
# make results FOLDER=submissions [CSV=results.csv] [FORCE=1 to replace its own earlier CSV].
results: $(STAMP)
	@test -n "$(FOLDER)" || { echo "Name the folder of notebooks: make results FOLDER=submissions"; exit 1; }
	$(BIN)/python tools/collect_results.py $(FOLDER) $(if $(CSV),--csv $(CSV)) $(if $(FORCE),--force)

# One pytest process for everything: unit tests, doctests, every solution notebook with its
# stored outputs compared (strict nbval), every exercise notebook tested for what differs from
# its solution (its setup, answer and check cells: see tests/exercise_run.py),
# spread over the machine's cores with one notebook per worker.
# uv: tests/test_binder.py resolves binder/requirements.txt with it.
test: $(STAMP) $(UV)
	$(BIN)/python -m pytest -n auto --dist loadfile $(NBVAL) tests helpers tools solutions notebooks

test-units: $(STAMP)
	$(BIN)/python -m pytest -n auto

test-solutions: $(STAMP)
	$(BIN)/python -m pytest -n auto --dist loadfile $(NBVAL) solutions

test-exercises: $(STAMP)
	$(BIN)/python -m pytest -n auto --dist loadfile $(NBVAL) notebooks

check: $(STAMP)
	$(BIN)/python -m helpers.preflight

# The site's build writes each chapter's slides too (tools/make_slides.py, into build/site/slides).
site: $(STAMP)
	$(BIN)/python tools/build_site.py build/site

exercises: $(STAMP)
	$(BIN)/python tools/make_exercises.py

solutions: $(STAMP)
	$(NBCONVERT_EXECUTE) solutions/*.ipynb
	$(BIN)/python tools/make_exercises.py

bench: $(STAMP)
	@for script in benchmarks/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

$(UV):
	@test -n "$(PYTHON)" || { echo "make lock needs Python 3.11, 3.12 or 3.13: PYTHON=..."; exit 1; }
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check uv==0.13.9

# One universal lock for every supported Python and platform; the versions already locked are
# kept unless requirements.txt asks for others.
lock: $(UV)
	{ echo "# Every package of the course's environment, pinned, for Python 3.11, 3.12 and 3.13 on Linux,"; \
	  echo "# macOS and Windows (one universal lock: markers pick the few platform-specific lines)."; \
	  echo "# Generated by \`make lock\` from requirements.txt: do not edit by hand."; } > build/lock.header
	grep -v '^#' requirements.lock > build/lock.body || true
	UV_PYTHON_DOWNLOADS=never $(UV) pip compile --quiet --universal --python-version 3.11 \
		--no-header --no-annotate requirements.txt -o build/lock.body
	cat build/lock.header build/lock.body > requirements.lock
	{ grep '^#' binder/requirements.txt; cat build/lock.body; } > build/binder.txt && mv build/binder.txt binder/requirements.txt
	rm -f build/lock.header build/lock.body

# Every supported Python present here other than the one running the tests: resolve the lock
# for it (wheels exist for every pinned package), without installing.
versions: $(UV)
	@found=0; for version in $(SUPPORTED_PYTHONS); do \
		for p in python$$version $$(pyenv root 2>/dev/null)/versions/$$version*/bin/python3; do \
			$(call is_supported,$$p) || continue; \
			found=1; echo "Python $$($$p -c 'import platform; print(platform.python_version())'):"; \
			rm -rf build/venv-$$version; $$p -m venv build/venv-$$version || exit 1; \
			UV_PYTHON_DOWNLOADS=never $(UV) pip install --quiet --dry-run \
				--python build/venv-$$version/bin/python -r requirements.lock || exit 1; \
			echo "  every package of requirements.lock resolves"; rm -rf build/venv-$$version; break; \
		done; \
	done; test $$found = 1 || echo "no other supported Python found"

clean:
	rm -rf $(VENV) build
