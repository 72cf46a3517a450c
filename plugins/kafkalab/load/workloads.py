"""Load workloads (``include/workloads/*.yaml`` with ``kind: load``): seed 003's sweeps."""

from __future__ import annotations

from kafkalab.config.loader import named_yaml_path
from kafkalab.errors import ConfigError
from kafkalab.load.spec import LoadWorkload
from kafkalab.yamlio import parse_model, read_yaml


def load_load_workload(name_or_path: str) -> LoadWorkload:
    """A load workload by name or path.

    Raises:
        ConfigError: unknown, invalid, or a latency workload (no ``kind: load``).
    """
    path = named_yaml_path("workloads", name_or_path)
    data = read_yaml(path)
    if data.get("kind") != "load":
        raise ConfigError(f"{path}: not a load workload (no 'kind: load'); run it with "
                          "`kafkalab run --workload`")
    return parse_model(LoadWorkload, data, str(path))
