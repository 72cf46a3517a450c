# Kafka Latency Lab: the daily loop. `make demo` and `make test` each run `setup` first.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.setup-stamp
PYTEST  := $(BIN)/python -m pytest
export GX_ANALYTICS_ENABLED := false
export SPARK_LOCAL_IP := 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: help setup demo demo-seed000 test test-fast lint bench clean airflow airflow-down nightly-demo

help:  ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): requirements.txt requirements-dev.txt constraints.txt pyproject.toml
	@command -v java >/dev/null || { echo "installing Java 17 (apt)"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null; }
	@command -v chromium >/dev/null || { echo "installing Chromium (apt) for the report tests"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -r requirements.txt -r requirements-dev.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	@touch $@

setup: $(STAMP)  ## venv with pinned requirements, Java, Chromium, Kafka 0.9.0.1, test images (idempotent)
	@$(BIN)/python -m tools.setup_assets

demo: demo-seed000 nightly-demo  ## seed 000's table, then the nightly DAG over several dates; prints the report path

demo-seed000: setup  ## start the embedded Kafka, re-run seed 000 (HTTP vs clients vs Kafka's tool), print the table
	$(BIN)/kafkalab cluster up
	$(BIN)/kafkalab run --workload images-quick

# The nightly DAG through `airflow dags test`, once per logical date, so the report has a
# history (drift verdicts need 3 earlier runs: the 4th date gets them). 400 messages a cell, as
# the scheduled nightly (include/workloads/nightly.yaml): p50 and p99 are defined and have
# two-sided 95 % intervals, so p99's noise does not raise alerts (~2 min a date).
NIGHTLY_DATES ?= 2026-11-18 2026-11-19 2026-11-20 2026-11-21
NIGHTLY_CONF  ?= {"scenarios":["rest","kafka-python","confluent-kafka","confluent-kafka-serial","jvm-e2e"],"payloads":["1kb","1mb"],"profiles":["latency"],"messages":400,"fault_trial":false}
nightly-demo: setup  ## run nightly_latency_regression for NIGHTLY_DATES, print the report path
	$(BIN)/kafkalab cluster up
	for d in $(NIGHTLY_DATES); do $(BIN)/python -m kafkalab.airflow.launcher dags-test nightly_latency_regression $$d --conf '$(NIGHTLY_CONF)' || exit $$?; done
	@echo "report: $(abspath lab-data/reports/index.html)"

airflow: setup  ## Airflow UI on 127.0.0.1:8080 (api-server, scheduler, triggerer, dag-processor); prints the login
	$(BIN)/kafkalab cluster up
	$(BIN)/python -m kafkalab.airflow.launcher up

airflow-down:  ## stop exactly the Airflow processes `make airflow` started
	-@test -x $(BIN)/python && $(BIN)/python -m kafkalab.airflow.launcher down

test: setup  ## the whole test suite against real services
	$(PYTEST) -q --durations=30

test-fast: setup  ## unit tests only
	$(PYTEST) -q -m unit

lint: setup  ## ruff + mypy
	$(BIN)/ruff check plugins tests dags spark_jobs tools
	$(BIN)/mypy

# Heavy (fixed ports, the embedded cluster, ~20 min): run it alone, e.g. under
# `flock /tmp/kl-heavy.lock make bench` when tests share the machine.
bench: setup  ## overhead vs a minimal loop, serial harness vs Kafka's tool, 1-10 MB, load (max rate vs bare loops and Kafka's perf tools, fan-out per core), Spark (1M/10M rows), one nightly run; JSON in bench/results/
	$(BIN)/python -m tools.bench --load --spark --nightly

clean: airflow-down  ## stop the embedded cluster, the fault cluster and Airflow, remove lab data and caches (keeps the venv)
	-@test -x $(BIN)/kafkalab && $(BIN)/kafkalab cluster down --wipe
	-@test -x $(BIN)/kafkalab && $(BIN)/kafkalab faults down --wipe
	rm -rf lab-data .pytest_cache .mypy_cache .ruff_cache spark-warehouse metastore_db derby.log
