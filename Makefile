# Kafka Latency Lab: the daily loop. `make demo` and `make test` each run `setup` first.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.setup-stamp
PYTEST  := $(BIN)/python -m pytest
# The venv's packages are installed by uv (pinned in constraints.txt, itself installed by the
# venv's pip): the same versions pip resolves, in 37 s instead of pip's 51 (2026-11-28, warm
# caches); byte-compiled at install as pip does, so no process compiles a library again (the
# machines this runs on set PYTHONDONTWRITEBYTECODE=1: without .pyc files from the install,
# every Python process compiles all it imports; tried 2026-12-07, the unit tests' CPU rose
# from ~270 to 467 CPU-s).
UV      := $(BIN)/uv pip install -q --python $(BIN)/python --compile-bytecode
export GX_ANALYTICS_ENABLED := false
export SPARK_LOCAL_IP := 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: help setup demo screenshots test test-serial test-fast lint bench clean clean-data airflow airflow-down nightly-demo spark-up spark-down

help:  ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): requirements.txt requirements-dev.txt constraints.txt pyproject.toml
	@command -v java >/dev/null || { echo "installing Java 17 (apt)"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null; }
	@command -v mvn >/dev/null || { echo "installing Maven (apt) to fetch Apache Kafka 4.x from Maven Central"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven >/dev/null; }
	@command -v chromium >/dev/null || { echo "installing Chromium (apt) for the report tests"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { echo "installing PostgreSQL (apt) for make airflow (no default cluster is created or started)"; mkdir -p /etc/postgresql-common && { grep -qs "^create_main_cluster" /etc/postgresql-common/createcluster.conf || echo "create_main_cluster = false" >> /etc/postgresql-common/createcluster.conf; } && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }
	@command -v redis-server >/dev/null || { echo "installing Redis (apt) for make airflow EXECUTOR=celery (the service is not started)"; p=/usr/sbin/policy-rc.d; made=; [ -e $$p ] || { printf '#!/bin/sh\nexit 101\n' > $$p && chmod +x $$p && made=1; }; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; rc=$$?; [ -z "$$made" ] || rm -f $$p; exit $$rc; }
	@command -v prometheus >/dev/null && command -v prometheus-node-exporter >/dev/null || { echo "installing Prometheus and node_exporter (apt) for the canary's and the export's tests (the services are not started)"; p=/usr/sbin/policy-rc.d; made=; [ -e $$p ] || { printf '#!/bin/sh\nexit 101\n' > $$p && chmod +x $$p && made=1; }; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus prometheus-node-exporter >/dev/null; rc=$$?; [ -z "$$made" ] || rm -f $$p; exit $$rc; }
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q -c constraints.txt uv
	$(UV) -c constraints.txt -r requirements.txt -r requirements-dev.txt
	$(UV) --no-deps -e .
	@touch $@

setup: $(STAMP)  ## venv with pinned requirements, Java, Maven, Chromium, Prometheus and node_exporter, Kafka 4.x (Maven Central, sha256-pinned) and 0.9.0.1, Toxiproxy (go install), test images (idempotent)
	@$(BIN)/python -m tools.setup_assets

demo: setup  ## the quickstart: seed 000's table and its reading, the nightly DAG over 4 dates, where to look next
	$(BIN)/kafkalab demo

# The demo's nightly matrix is small (kafkalab/demo.py: DEMO_NIGHTLY_CONF). The scheduled
# nightly's own matrix over the same 4 dates (400 messages a cell; ~2 min a date):
NIGHTLY_CONF  ?= {"scenarios":["rest","kafka-python","confluent-kafka","confluent-kafka-serial","jvm-e2e"],"payloads":["1kb","1mb"],"profiles":["latency"],"messages":400,"fault_trial":false}
nightly-demo: setup  ## the nightly DAG with its full matrix over the demo's 4 dates (no seed 000)
	$(BIN)/kafkalab demo --no-seed000 --nightly-conf '$(NIGHTLY_CONF)'

# The README's pictures (docs/images/), from the report and the Airflow DB `make demo` left.
screenshots: setup  ## retake docs/images/*.png (the report; Airflow's grid and trigger form) in headless Chromium (after make demo)
	$(BIN)/python -m tools.screenshots

EXECUTOR ?= local
airflow: setup  ## Airflow on 127.0.0.1:8080: scheduler on a private PostgreSQL, api-server/UI, triggerer, dag-processor; EXECUTOR=celery adds Redis + a Celery worker; prints the login user and the path of its 0600 password file (never the password)
	$(BIN)/kafkalab cluster up
	$(BIN)/python -m kafkalab.airflow.launcher up --executor $(EXECUTOR)

airflow-down:  ## stop exactly the Airflow processes, the Redis and the PostgreSQL `make airflow` started
	-@test -x $(BIN)/python && $(BIN)/python -m kafkalab.airflow.launcher down

spark-up: setup  ## a Spark standalone cluster on 127.0.0.1 (master :7077, UI :8180, 2 workers); prints the KAFKALAB_SPARK_MASTER export line
	$(BIN)/kafkalab spark up

spark-down:  ## stop exactly the Spark master and workers `make spark-up` started
	-@test -x $(BIN)/kafkalab && $(BIN)/kafkalab spark down

TEST_ARGS ?=
# make test sets up the lab's assets itself (tools/run_tests.py: tools.setup_assets as a step of its
# own, beside the unit tests, which need only the venv)
test: $(STAMP)  ## the whole test suite against real services, in three lanes side by side (tools/run_tests.py), the assets' set-up beside the unit tests; TEST_ARGS go to every pytest
	$(BIN)/python -m tools.run_tests $(TEST_ARGS)

test-serial: setup  ## the whole test suite in one pytest process
	$(PYTEST) -q --durations=30

test-fast: setup  ## unit tests only
	$(PYTEST) -q -m unit

lint: setup  ## ruff + mypy + the import contracts (layers, no cycles: pyproject.toml)
	$(BIN)/ruff check plugins tests dags spark_jobs tools
	$(BIN)/mypy
	PYTHONPATH=plugins:. $(BIN)/lint-imports

# Heavy (fixed ports, the embedded cluster, ~20 min): run it alone, e.g. under
# `flock /tmp/kl-heavy.lock make bench` when tests share the machine.
bench: setup  ## overhead vs a minimal loop, serial harness vs Kafka's tool, 1-10 MB, load (max rate vs bare loops and Kafka's perf tools, fan-out per core), Spark (1M/10M rows), one nightly run, consumer faults and ordering, the report's cost by history size, spark-submit vs Spark Connect, a KRaft node's start with its class-data archive, make demo by phase, the degradable links' cost, the canary against a minimal loop; JSON in bench/results/
	$(BIN)/python -m tools.bench --load --spark --nightly --faults --report --connect --nodes --demo --links --canary

clean: airflow-down  ## stop the embedded cluster, the fault cluster and Airflow, remove their files and the caches (keeps the venv and every measurement: see clean-data)
	-@test -x $(BIN)/kafkalab && $(BIN)/kafkalab cluster down --wipe
	-@test -x $(BIN)/kafkalab && $(BIN)/kafkalab faults down --wipe
	-@test -x $(BIN)/kafkalab && $(BIN)/kafkalab spark down --wipe
	rm -rf .pytest_cache .mypy_cache .ruff_cache spark-warehouse metastore_db derby.log
	-@test -x $(BIN)/uv && $(BIN)/uv cache prune -q  # what no installed package needs any more (every clean clone's set-up adds to it)

clean-data:  ## DELETE every measurement, report, drift acceptance and the alert state (lab-data/ or $$KAFKALAB_DATA_DIR); asks first, CONFIRM=yes for scripts
	@$(BIN)/python -m tools.clean_data $(if $(filter yes,$(CONFIRM)),--yes)
