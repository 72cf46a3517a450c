"""Profiles, workloads and their mapping to client settings."""

from kafkalab.config.loader import known_names, load_profile, load_workload
from kafkalab.config.models import Profile, Workload

__all__ = ["Profile", "Workload", "known_names", "load_profile", "load_workload"]
