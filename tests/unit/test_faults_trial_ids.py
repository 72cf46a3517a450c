"""A trial id names one measurement of a run: a retry of the same spec may replace it, another
spec under the same id is refused before anything is measured (its evidence would be lost)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkalab.errors import ConfigError
from kafkalab.faults import files
from kafkalab.faults.engine import _refuse_another_spec
from kafkalab.faults.spec import FaultTrialSpec

pytestmark = pytest.mark.unit

HOOK = {"trial": 2, "profile": "default", "fault": "kill-consumer", "consumers": 2,
        "partitions": 4, "victim_dies_after_records": 3}


def _measured(final: Path, spec: FaultTrialSpec) -> None:
    final.mkdir(parents=True)
    files.trial_json_path(final).write_text(json.dumps({"trial_id": "x", "spec": spec.model_dump()}))


def test_the_same_spec_again_may_replace_its_trial(tmp_path: Path) -> None:
    spec = FaultTrialSpec(**HOOK)
    _measured(tmp_path / "trial=x", spec)
    _refuse_another_spec(tmp_path / "trial=x", "r1", "x", FaultTrialSpec(**HOOK))
    _refuse_another_spec(tmp_path / "never-measured", "r1", "x", spec)


def test_another_spec_under_the_same_trial_id_is_refused_naming_what_differs(tmp_path: Path) -> None:
    spec = FaultTrialSpec(**HOOK)
    other = FaultTrialSpec(**{**HOOK, "victim_dies_after_records": 5, "partitions": 6})
    assert spec.trial_id("all") == other.trial_id("all")  # the id does not tell them apart
    _measured(tmp_path / "trial=x", spec)
    with pytest.raises(ConfigError) as err:
        _refuse_another_spec(tmp_path / "trial=x", "r1", spec.trial_id("all"), other)
    message = str(err.value)
    assert "differs in partitions, victim_dies_after_records" in message
    assert "trial=N" in message and "\n" not in message


def test_fields_an_older_trial_did_not_record_are_not_compared(tmp_path: Path) -> None:
    spec = FaultTrialSpec(**HOOK)
    final = tmp_path / "trial=x"
    final.mkdir()
    old = {k: v for k, v in spec.model_dump().items() if k != "victim_dies_after_records"}
    files.trial_json_path(final).write_text(json.dumps({"spec": old}))
    _refuse_another_spec(final, "r1", "x", FaultTrialSpec(**{**HOOK, "victim_dies_after_records": 7}))
