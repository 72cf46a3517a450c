"""Profiles, workloads and their mapping to client settings."""

from kafkalab.config.loader import known_names, load_profile, load_workload
from kafkalab.config.models import SCENARIOS, Profile, Workload

__all__ = ["SCENARIOS", "Profile", "Workload", "known_names", "load_profile", "load_workload"]
