"""The static trend report (``kafkalab.report.build.build_report``)."""

from __future__ import annotations

__all__ = ["build_report"]


def __getattr__(name: str) -> object:
    # Lazy: importing the package does no work and loads no pandas.
    if name == "build_report":
        from kafkalab.report.build import build_report

        return build_report
    raise AttributeError(name)
