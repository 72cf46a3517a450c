"""The static trend report: :func:`build_report` writes ``<data_dir>/reports/``.

* :mod:`~kafkalab.report.build`: page assembly and the entry point ``build_report``;
* :mod:`~kafkalab.report.data`: what a page shows, read through the store and drift;
* :mod:`~kafkalab.report.pages`: a page's body: a run's sections by its kind, the runs table;
* :mod:`~kafkalab.report.latency_sections`: a latency run's sections;
* :mod:`~kafkalab.report.trends`: a latency run's section 2, trends over the nights
  measured (payload panels, baseline bands, drift markers, change points) and 2b, the
  per-cell percentile spectrum; :mod:`~kafkalab.report.spectrum` reads the raw samples for it and
  :mod:`~kafkalab.report.changepoints` finds level changes (``ruptures`` PELT);
* :mod:`~kafkalab.report.load_data` / :mod:`~kafkalab.report.load_sections`: a load run's
  tables and page;
* :mod:`~kafkalab.report.fault_data` / :mod:`~kafkalab.report.fault_sections`: a fault run's
  tables and page: :mod:`~kafkalab.report.durability_section` ("Durability and
  availability") and :mod:`~kafkalab.report.consumer_faults_section` ("Consumer faults"),
  sharing :mod:`~kafkalab.report.fault_parts`;
* :mod:`~kafkalab.report.checks_section`: every run page's checks (state, validation,
  drift) and its state banner; :mod:`~kafkalab.report.settings_section`: its clients'
  settings;
* :mod:`~kafkalab.report.page_parts`: what the sections share (figures, ranks, series keys);
* :mod:`~kafkalab.report.charts`: pure inline SVG charts;
* :mod:`~kafkalab.report.format`: escaping, number formats, links, inlined assets.
"""

from __future__ import annotations

__all__ = ["build_report"]


def __getattr__(name: str) -> object:
    # Lazy: importing the package does no work and loads no pandas.
    if name == "build_report":
        from kafkalab.report.build import build_report

        return build_report
    raise AttributeError(name)
