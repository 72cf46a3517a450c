"""The sections of a fault run's page, one module each:

1. **Durability and availability** (``#durability``): the broker faults
   (:mod:`kafkalab.report.durability_section`);
2. **Consumer faults** (``#consumer-faults``, only when the run has ``kill-consumer`` /
   ``leave-consumer`` trials): the consumer-group faults
   (:mod:`kafkalab.report.consumer_faults_section`);
3. **Run state and validation** (``#checks``, :mod:`kafkalab.report.checks_section`): as on a
   load run's page, without drift (2. when there is no consumer fault).

What the two fault sections share is :mod:`kafkalab.report.fault_parts`.
"""

from __future__ import annotations

from pathlib import Path

from kafkalab.report.checks_section import section_checks
from kafkalab.report.consumer_faults_section import section_consumer
from kafkalab.report.data import RunView
from kafkalab.report.durability_section import section_durability


def fault_sections(v: RunView, page_dir: Path) -> str:
    """The sections of a fault run's page (the caller adds the banners)."""
    consumer = section_consumer(v, number=2)
    return (section_durability(v) + consumer
            + section_checks(v, page_dir, number=3 if consumer else 2))


__all__ = ["fault_sections"]
