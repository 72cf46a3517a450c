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

.PHONY: help setup demo demo-quick test test-fast lint bench clean airflow airflow-down

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
	@$(BIN)/python -m kafkalab.setup_assets

demo: setup  ## start the embedded Kafka, re-run seed 000, print the table
	$(BIN)/kafkalab cluster up
	$(BIN)/kafkalab run --workload demo

test: setup  ## the whole test suite against real services
	$(PYTEST) -q

test-fast: setup  ## unit tests only
	$(PYTEST) -q -m unit

lint: setup  ## ruff + mypy
	$(BIN)/ruff check plugins tests dags spark_jobs
	$(BIN)/mypy

bench: setup  ## benchmark on the embedded kafka09 cluster; results in bench/results/
	$(BIN)/python -m kafkalab.bench

clean:  ## stop the embedded cluster, remove lab data and caches (keeps the venv)
	-@test -x $(BIN)/kafkalab && $(BIN)/kafkalab cluster down --wipe
	rm -rf lab-data .pytest_cache .mypy_cache .ruff_cache spark-warehouse metastore_db derby.log
