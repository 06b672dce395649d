# gradbook: two commands on a fresh machine.
#   make book   build the whole bilingual site into _build/html (executes every chapter,
#               on every core), its PDF editions (_build/pdf) and its downloads
#   make test   run every test (builds the book first; the site tests read it)
# and a fast loop while working:
#   make check  ruff, then every test that needs no built book, browser or Colab venv
# Everything runs inside .venv/, created and filled from requirements/constraints.txt.
# The kernels' environment (TensorFlow quiet and reproducible, ...) lives in
# gradlib/book/kernel.json; the site extension, the tools and tests/conftest.py
# apply it, so it is not exported here (except PYTHONHASHSEED, see below).

SHELL   := /bin/bash
PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.gradbook-installed
PORT    ?= 8000

# Python fixes its hash seed at start-up, before conftest or the site extension
# can set it; the pytest and Sphinx processes run TensorFlow (tests train
# models in-process), so they start with the kernels' value, read from its home.
export PYTHONHASHSEED := $(shell sed -n 's/.*"PYTHONHASHSEED": *"\([0-9]*\)".*/\1/p' gradlib/book/kernel.json)

.PHONY: help venv colab-env book html pdf browser check test serve bench notebooks lock clean student grade lab

help:
	@echo "make book       build the site into _build/html (executes every chapter), with its PDFs and downloads"
	@echo "make check      ruff, then every test that needs no built book, browser or Colab venv (fast)"
	@echo "make test       build, then run every test (TensorFlow 2.21, then gradlib's tests on 2.19)"
	@echo "make colab-env  create .venv-colab: Colab's packages on TensorFlow 2.19, without gradlib"
	@echo "make browser    install Debian's Chromium for the browser tests (apt-get, as root)"
	@echo "make serve      preview the built site on http://localhost:$(PORT)"
	@echo "make pdf        print the PDF editions to _build/pdf (and into the site, _build/html/pdf)"
	@echo "make lab        open the chapters as notebooks in JupyterLab [LAB_PORT=8888] [LAB_ARGS=--no-browser]"
	@echo "make bench      time builds and chapters against the import floor, the ops (eager, tf.function, XLA), a quantized layer and larq"
	@echo "make notebooks  regenerate the .ipynb twins of chapters/*/*.md (discards edits made in them)"
	@echo "make student    write the student edition (no solutions) to _build/student"
	@echo "make grade SUBMISSIONS='hw/*.ipynb' [OUT=grades.csv] [JOBS=2]  run and grade students' notebooks"
	@echo "make lock       re-pin requirements/constraints.txt from the current .venv"
	@echo "make clean      remove _build (keeps .venv)"

# TensorFlow for the CPU (the `cpu` extra, package tensorflow-cpu) where it is
# published: Linux on x86-64 and Windows.  Elsewhere (macOS on Apple silicon,
# Linux on ARM) the `tf` extra, package tensorflow.  Intel Macs have no
# TensorFlow the book supports (the last release for them is 2.16).
TF_EXTRA ?= $(if $(filter Linux-x86_64 Linux-amd64,$(shell uname -s)-$(shell uname -m)),cpu,tf)
# The pinned versions need Python 3.11.5 or newer; TensorFlow 2.21 has no
# packages for 3.14.
PY_RANGE := (3, 11, 5) <= sys.version_info[:3] < (3, 14)

$(STAMP): pyproject.toml requirements/constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -c 'import sys; sys.exit(not ($(PY_RANGE)))' || { \
	  echo "$(VENV) runs Python $$($(BIN)/python -c 'import platform; print(platform.python_version())'):" \
	    "the book needs Python 3.11.5 to 3.13. Remove $(VENV) and run make again with" \
	    "PYTHON=python3.12 (or another Python in that range)." >&2; exit 1; }
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -c requirements/constraints.txt -e ".[$(TF_EXTRA),book,test]"
	@touch $@

venv: $(STAMP)

# A Colab-like environment on the oldest supported TensorFlow (2.19), without
# gradlib: the chapter notebooks install it themselves there (tools/colab_sim.py),
# and gradlib's unit tests run there too.
COLAB       := .venv-colab
COLAB_STAMP := $(COLAB)/.gradbook-installed

$(COLAB_STAMP): requirements/colab.txt
	@test -x $(COLAB)/bin/python || $(PYTHON) -m venv $(COLAB)
	$(COLAB)/bin/python -m pip install --quiet --upgrade "pip>=24"
	$(COLAB)/bin/python -m pip install --quiet -r requirements/colab.txt
	@touch $@

colab-env: $(COLAB_STAMP)

# The execution cache keys on each notebook's code, not on gradlib's: when
# gradlib's code changes, cached outputs would be stale, so the build starts
# afresh.  The benchmark report (gradlib/book/bench-latest.json) is data only
# the appendix pages show: they are never served from the cache
# (execution_mode: force in their front matter), so when the report changes
# Sphinx only has to re-read the pages (its environment is dropped): the
# appendix re-executes, every other page comes from the cache.
GRADLIB_HASH = $(shell find gradlib \( -name '*.py' -o -name '*.json' \) ! -name 'bench-latest.json' -print0 | sort -z | xargs -0 cat | sha256sum | cut -c1-16)
BENCH_REPORT := gradlib/book/bench-latest.json
BENCH_HASH = $(shell sha256sum $(BENCH_REPORT) | cut -c1-16)

# larq, for the bench's comparison with gradlib's ste_sign and chapter 7's with
# QuantizedDense (requirements/larq.txt says why it lives in a folder of its
# own, installed without its dependencies; both run it in a subprocess).  If it
# cannot be installed, the bench and the chapter go on and say so.
LARQ_SITE  := $(VENV)/larq-site
LARQ_STAMP := $(LARQ_SITE)/.gradbook-installed

$(LARQ_STAMP): requirements/larq.txt $(STAMP)
	rm -rf $(LARQ_SITE)
	$(BIN)/python -m pip install --quiet --no-deps --target $(LARQ_SITE) -r requirements/larq.txt \
	  && touch $@ || echo "larq could not be installed: make bench and chapter 7 go on without it and say so"

NODE_STAMP := node_modules/.package-lock.json

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts

# The site: the HTML (html), its PDF editions (pdf) and its downloads: the
# source and an offline copy of the site (tools/downloads.py).
book: html pdf
	$(BIN)/python -m tools.downloads

html: $(STAMP) $(NODE_STAMP) $(LARQ_STAMP)
	@if [ "$$(cat _build/.gradlib-hash 2>/dev/null)" != "$(GRADLIB_HASH)" ]; then \
	  echo "gradlib changed: executing every chapter afresh"; rm -rf _build; fi
	@if [ -d _build ] && [ "$$(cat _build/.bench-hash 2>/dev/null)" != "$(BENCH_HASH)" ]; then \
	  echo "the benchmark report changed: re-reading every page (only the appendix re-executes)"; \
	  rm -f _build/.doctrees/environment.pickle; fi
	$(BIN)/python -m tools.prebuild
	$(BIN)/jupyter-book build . --builder html -n -W --keep-going
	@echo "$(GRADLIB_HASH)" > _build/.gradlib-hash
	@echo "$(BENCH_HASH)" > _build/.bench-hash

# The browser tests drive Debian's Chromium (never Playwright's own download).
# CI runs as root on a fresh Debian machine.
browser:
	@test -x /usr/bin/chromium || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)

# The fast loop: no book, no browser, no second venv (markers in pyproject.toml).
CHECK_MARKERS := not site and not colab and not slow

check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -p no:cacheprovider -m "$(CHECK_MARKERS)" --durations=15

# Every test on TensorFlow 2.21 (the simulated Colab run included), then
# gradlib's own tests again on TensorFlow 2.19 (the site is tested once).
# Both runs use every core (pytest-xdist): tests are handed out one at a time,
# except the Colab simulation's, which share one run of every notebook
# (xdist_group "colab" keeps them on one worker).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
XDIST := -n $(JOBS) --dist loadgroup

test: book browser colab-env
	$(BIN)/python -m pytest $(XDIST) --durations=25
	PYTHONPATH=$(CURDIR) $(COLAB)/bin/python -m pytest $(XDIST) -p no:cacheprovider -m "not site and not colab and not build"

# The PDF editions, one per language (tools/pdf.py): Debian's Chromium prints
# the built site; the Chinese one needs a CJK font, Debian's fonts-wqy-microhei
# (tools/pdf.py: CJK_FONT_PACKAGE, CJK_FONT_FILE), installed here as root.
CJK_FONT := /usr/share/fonts/truetype/wqy/wqy-microhei.ttc

pdf: html browser
	@test -e $(CJK_FONT) || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y fonts-wqy-microhei)
	$(BIN)/python -m tools.pdf

serve: book
	$(BIN)/python -m http.server --directory _build/html $(PORT)

# The chapters as notebooks in JupyterLab, from .venv (tools/lab.py: chapters/
# as the root, the kernels' "colab" environment, 127.0.0.1 only; LAB_ARGS takes
# --no-browser, --ip ...).  Saving a notebook writes its outputs into the
# .ipynb twin: `make notebooks` restores the twins.
LAB_PORT ?= 8888
LAB_ARGS ?=

lab: $(STAMP)
	$(BIN)/python -m tools.lab --port $(LAB_PORT) $(LAB_ARGS)

bench: $(STAMP) $(NODE_STAMP) $(LARQ_STAMP)
	$(BIN)/python -m tools.bench

# The .ipynb twins (with the Colab install cell); the .md files are never edited.
notebooks: $(STAMP)
	$(BIN)/python -m tools.notebooks --write

student: $(STAMP)
	$(BIN)/python -m tools.student_edition --out _build/student

grade: $(STAMP)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS='hw/*.ipynb' [OUT=grades.csv] [JOBS=2]"; exit 2; }
	$(BIN)/python -m gradlib.grade $(SUBMISSIONS) --out $(or $(OUT),grades.csv) --jobs $(or $(JOBS),1)

lock: $(STAMP)
	@{ sed -n '1,3p' requirements/constraints.txt; \
	   $(BIN)/python -m pip freeze --exclude-editable | grep -iv '^gradlib' \
	   | sed 's/^tensorflow[-_]cpu==\(.*\)/&\ntensorflow==\1/'; } > requirements/constraints.txt.new
	mv requirements/constraints.txt.new requirements/constraints.txt

clean:
	rm -rf _build
