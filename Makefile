# docq: two commands do all the set-up on a fresh Debian machine with Python 3.11.
#   make up     start the whole local stack (redis, tritonserver, api, workers, flower)
#   make test   run the test suite (starts the services it needs on free ports)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
MODEL  := model_repository/doc-type/1/model.onnx
LANG_MODEL := model_repository/doc-lang/1/model.onnx

.PHONY: up test test-fast test-e2e lint format install system model train bench load clean

# The local stack may call webhook receivers on this machine (the SSRF guard allows it here).
# DOCQ_REDIS_MODE=sentinel make up: Redis as a master, a replica and three Sentinels
# (devstack/stack.py) instead of one redis-server; the Procfile's processes of that mode.
up: install system model
	DOCQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS=$${DOCQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS:-true} \
		$(BIN)/honcho start -f Procfile $$($(BIN)/python -m devstack --names)

# The tiers (tests/tiers.py): test-fast while you work (minutes: no Celery workers, no
# kills, no model builds), test-e2e the rest, test everything (what .ci/run calls). Under
# `make test` a program a test needs (promtool, chromium) fails the test when missing.
# test and test-e2e run in two processes (pytest-xdist), a module in one of them: the
# 10-minute outage test waits most of its time, and the other process runs the rest
# (tests/tiers.py puts the slow tests first; the files keep that order). test-fast also
# keeps a module in one process, largest first: its module fixtures (an S3 emulator, the
# Triton interpreter's kernel run) start once, not in each process (docs/performance.md).
XDIST := -n 2 --dist loadfile --no-loadscope-reorder

# Bytecode: this machine sets PYTHONDONTWRITEBYTECODE=1 and uv installs no .pyc, so every
# process of a run (each xdist worker, every Python child a test starts) compiled every
# module it imported from source: 13 s of a 23 s collection. The test lines write the compiled
# modules into one folder of the virtualenv (never beside the sources, nor into the model
# repository, which Triton serves): the processes of one run share them, and the next run
# starts with them.
PYCACHE := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/$(VENV)/pycache

test: install system model
	$(PYCACHE) DOCQ_TESTS_REQUIRE_TOOLS=1 $(BIN)/pytest $(XDIST) $(PYTEST_ARGS)

test-fast: install system model
	$(PYCACHE) $(BIN)/pytest -n 2 --dist loadfile -m "not (e2e or faults or build or slow)" $(PYTEST_ARGS)

test-e2e: install system model
	$(PYCACHE) DOCQ_TESTS_REQUIRE_TOOLS=1 $(BIN)/pytest $(XDIST) -m "e2e or faults or build or slow" $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

install: $(STAMP)

# The project with every extra, in a virtualenv, at the versions of uv.lock (the one lock:
# docs/client.md). uv exports the lock's pins (every package, torch's CPU build among them:
# pyproject.toml's [tool.uv.sources]) and installs exactly those, from pip's own sources
# (devstack/uvpip.py: the CPU build of torch lies on disk, an unpinned one pulls a
# multi-GB CUDA build), in seconds instead of minutes; pip, from the same list, stays the
# fallback.
EXTRAS := --extra server --extra build --extra bench --extra dev
LOCKED := $(VENV)/requirements.lock.txt

$(STAMP): pyproject.toml client/pyproject.toml uv.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet 'uv>=0.13,<0.14'
	$(BIN)/uv export --quiet --frozen --no-hashes --no-emit-workspace $(EXTRAS) -o $(LOCKED)
	$(BIN)/python -m devstack.uvpip --quiet --no-deps -r $(LOCKED) -e . \
		|| { $(BIN)/pip install --quiet --upgrade pip && $(BIN)/pip install --quiet --no-deps -r $(LOCKED) -e .; }
	touch $@

# System packages: only redis-server (tritonserver comes inside the nvidia-pytriton wheel; the
# Sentinels of DOCQ_REDIS_MODE=sentinel are the same binary, `redis-server --sentinel`).
system:
	@command -v redis-server >/dev/null 2>&1 || { \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }
	@# OCR (docq.extract): Tesseract's English data from Debian (tesseract-ocr-eng, with
	@# tesseract-ocr itself); the tesserocr wheel carries libtesseract, these its languages.
	@test -f /usr/share/tesseract-ocr/5/tessdata/eng.traineddata || { \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends tesseract-ocr tesseract-ocr-eng >/dev/null; }
	@# The Python-backend stub embeds libpython: Debian ships it apart from the interpreter.
	@$(BIN)/python -c "import sysconfig,pathlib,sys; d=sysconfig.get_config_var('LIBDIR'); sys.exit(0 if list(pathlib.Path(d).glob('libpython3.11.so*')) or list(pathlib.Path('/usr/lib').rglob('libpython3.11.so*')) else 1)" \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libpython3.11 >/dev/null; }
	@# The browser tests (tests/browser) drive Debian's chromium; only `make test` and `make test-e2e` need it,
	@# so a first `make up` does not wait for its download.
	@case " $(MAKECMDGOALS) " in *" test "*|*" test-e2e "*) command -v chromium >/dev/null 2>&1 || { \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } ;; esac
	@# The alert rules' unit tests (tests/deploy/test_observability.py) run Prometheus' promtool.
	@case " $(MAKECMDGOALS) " in *" test "*|*" test-e2e "*) command -v promtool >/dev/null 2>&1 || { \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends prometheus >/dev/null; } ;; esac

# The demo models are built once and reused: doc-type (document type) and doc-lang
# (document language), two models on one Triton. Each joins the wheel's encoder and its
# committed trained head (conversion/heads/); where the exported file is the one the head's
# record says passed the held-out gate, only the parity check runs again: seconds, not
# the minutes of training (conversion/attestation.py).
model: $(MODEL) $(LANG_MODEL)

# Train both heads anew and run every gate (minutes on 2 cores): after a change to a
# corpus, a seed or the training code. Commit conversion/heads/ afterwards;
# tests/conversion/test_demo_training.py fails until then.
train: install
	$(BIN)/python -m conversion.demos --train

# Both in one process (conversion/demos.py says why); either missing, or a committed head
# newer than the published models (a pull that retrained one), rebuilds both.
$(MODEL) $(LANG_MODEL) &: conversion/heads/doc-type.safetensors conversion/heads/doc-lang.safetensors | $(STAMP)
	$(BIN)/python -m conversion.demos

# make bench BENCH_ARGS="--cores 16 --baseline-workers 2,4,8,16 --out bench/pipeline-16c.json"
# (python -m bench.pipeline --help lists the options; --documents 40 rehearses in minutes)
bench: install system model
	$(BIN)/python -m bench.pipeline $(BENCH_ARGS)

# Issue 11's load run against a running `make up` (another terminal): Locust, 100 users of
# two tenants for 3 minutes; Locust's own statistics, each endpoint's p50/p99 and failures,
# in bench/results/load_stats.csv (LOAD_ARGS="-u 5 -t 20s --csv /tmp/load" rehearses it)
load: install
	$(BIN)/python -m locust -f bench/locustfile.py --headless --only-summary -u 100 -r 10 \
		-t 3m --host http://127.0.0.1:8080 --stop-timeout 10 --csv bench/results/load $(LOAD_ARGS)

clean:
	rm -rf $(VENV) build model_repository/*/[0-9]*/
