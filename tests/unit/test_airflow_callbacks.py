"""The DAG failure callback (no Airflow services: the webhook lookup and delivery are stubbed
here; tests/unit/test_alert_providers.py delivers through the real hooks)."""

from __future__ import annotations

from typing import Any

import pytest

import kafkalab.alerts
from kafkalab.airflow.callbacks import on_failure_alert
from kafkalab.airflow.connections import AlertWebhookConnection
from kafkalab.alerts.webhook import AlertWebhook


class _Named:
    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


def test_on_failure_alert_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AlertWebhookConnection, "get_connection", lambda self: None)

    class Broken:
        @property
        def run_id(self) -> str:
            raise RuntimeError("boom")

    on_failure_alert({"dag_run": Broken(), "reason": "task_failure"})  # must not raise
    on_failure_alert({})

    def failing_lookup(self: AlertWebhookConnection) -> None:
        raise RuntimeError("secrets backend down")

    monkeypatch.setattr(AlertWebhookConnection, "get_connection", failing_lookup)
    on_failure_alert({"reason": "task_failure"})


def test_on_failure_alert_posts_run_failed(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Without a failure record (e.g. a failure before any task ran) the context says what
    failed."""
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(tmp_path / "data"))
    sent: list[dict[str, Any]] = []

    def record(webhook: AlertWebhook, dag_id: str | None, run_id: str | None, error: str,
               **kwargs: Any) -> dict[str, Any]:
        sent.append({"url": webhook.url, "dag_id": dag_id, "run_id": run_id, "error": error,
                     **kwargs})
        return {}

    hook = AlertWebhook("https://hooks.example/T/X", "generic", "https://reports.example")
    monkeypatch.setattr(AlertWebhookConnection, "settings", lambda self: hook)
    monkeypatch.setattr(kafkalab.alerts, "alert_run_failed", record)
    on_failure_alert({
        "dag": _Named(dag_id="nightly_latency_regression"),
        "dag_run": _Named(run_id="scheduled__2026-11-21T00:00:00+00:00"),
        "task_instance": _Named(task_id="measure_cell", map_index=-1, try_number=1,
                                log_url="http://af.example/dags/n/runs/r/tasks/measure_cell"),
        "reason": "task_failure",
        "exception": ValueError("broker gone"),
    })
    assert sent == [{
        "url": "https://hooks.example/T/X", "dag_id": "nightly_latency_regression",
        "run_id": "nightly-20261121T000000Z",
        "error": "task_failure; task measure_cell failed; ValueError: broker gone",
        "report_url": "https://reports.example/nightly-20261121T000000Z/index.html",
        "failed_task": {"task_id": "measure_cell", "map_index": -1, "try_number": 1,
                        "log_url": "http://af.example/dags/n/runs/r/tasks/measure_cell"},
        "airflow_run_id": "scheduled__2026-11-21T00:00:00+00:00",
    }]


def _ctx(task_id: str, exc: Exception | None, map_index: int = -1) -> dict[str, Any]:
    return {"dag": _Named(dag_id="latency_experiment"),
            "dag_run": _Named(run_id="manual__2026-11-21T00:00:00+00:00"),
            "task_instance": _Named(task_id=task_id, map_index=map_index, try_number=2),
            "exception": exc}


def test_the_alert_names_the_task_that_failed_first_not_the_last(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """A run whose broker is down: check_cluster fails first (its ClusterError is the
    cause), then close_run and the watcher verify_outcome; Airflow hands the DAG callback
    the last of them. The alert names the first, with its error, and lists what followed."""
    from kafkalab.airflow.callbacks import failures_path, first_failure, record_task_failure
    from kafkalab.errors import ClusterError
    from kafkalab.store import LabData

    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "http://127.0.0.1:8080")
    sent: list[str] = []
    tasks: list[dict[str, Any]] = []
    hook = AlertWebhook("https://hooks.example/T/X", "generic", None)
    monkeypatch.setattr(AlertWebhookConnection, "settings", lambda self: hook)

    def record(webhook: AlertWebhook, dag_id: str, run_id: str, error: str, **kw: Any) -> None:
        sent.append(error)
        tasks.append(kw["failed_task"])

    monkeypatch.setattr(kafkalab.alerts, "alert_run_failed", record)
    record_task_failure(_ctx("check_cluster", ClusterError("cannot reach Kafka at 127.0.0.1:41599")))
    record_task_failure(_ctx("measure_cell", RuntimeError("upstream"), map_index=0))
    record_task_failure(_ctx("close_run", RuntimeError("run was never started")))
    record_task_failure(_ctx("verify_outcome", RuntimeError("an upstream task failed")))
    lab = LabData()
    lines = failures_path(lab, "experiment-20261121T000000Z").read_text().splitlines()
    assert len(lines) == 4
    first, later = first_failure(lab, "experiment-20261121T000000Z")
    assert first is not None and first["task_id"] == "check_cluster" and first["try_number"] == 2
    assert later == ["measure_cell", "close_run"]  # the watcher is never a cause
    on_failure_alert({**_ctx("verify_outcome", None), "reason": "task_failure"})
    assert sent == ["task check_cluster failed first: ClusterError: cannot reach Kafka at "
                    "127.0.0.1:41599; then measure_cell, close_run"]
    # The log link is the first failure's (not the watcher's the context hands over), formed
    # as Airflow forms TaskInstance.log_url.
    assert tasks == [{
        "task_id": "check_cluster", "map_index": -1, "try_number": 2,
        "log_url": "http://127.0.0.1:8080/dags/latency_experiment/runs/"
                   "manual__2026-11-21T00%3A00%3A00%2B00%3A00/tasks/check_cluster?try_number=2"}]


def test_a_mapped_first_failure_names_its_index_and_a_torn_line_is_skipped(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from kafkalab.airflow.callbacks import _failure_reason, failures_path, record_task_failure
    from kafkalab.store import LabData

    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(tmp_path / "data"))
    record_task_failure(_ctx("measure_cell", ValueError("x" * 5000), map_index=0))
    path = failures_path(LabData(), "experiment-20261121T000000Z")
    with path.open("a") as f:
        f.write('{"task_id": "close_r')  # a line torn by a crash mid-write
    reason = _failure_reason(_ctx("close_run", None), "experiment-20261121T000000Z")
    assert reason.startswith("task measure_cell[0] failed first: ValueError: xxx")
    assert len(reason) < 2100  # the error is cut at 2,000 characters


def test_recording_a_failure_never_raises(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from kafkalab.airflow.callbacks import record_task_failure

    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(blocked))
    record_task_failure(_ctx("check_cluster", ValueError("x")))  # unwritable: only logs
    record_task_failure({})


def test_task_log_url_is_airflows_own_link() -> None:
    """:func:`task_log_url` forms the link as Airflow's ``TaskInstance.log_url`` does (the
    property run on a stand-in task instance), mapped or not, with or without a try."""
    from airflow.models.taskinstance import TaskInstance

    from kafkalab.airflow.callbacks import task_log_url

    airflows_log_url = vars(TaskInstance)["log_url"].fget

    for map_index, try_number in ((-1, 2), (3, 1), (0, 0)):
        ti = _Named(dag_id="load_experiment", run_id="manual__2026-11-21T00:00:00+00:00",
                    task_id="run_cell", map_index=map_index, try_number=try_number)
        assert task_log_url("load_experiment", "manual__2026-11-21T00:00:00+00:00",
                            "run_cell", map_index, try_number) == airflows_log_url(ti)


def test_the_callback_names_the_lab_run_the_tasks_wrote(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Any) -> None:
    """A back-filled night (`dags test nightly 2026-11-18` run on the 22nd): the run id holds
    the trigger time, the logical date the night; the failure record and the alert name the
    lab run the tasks wrote (the night's, from the logical date), not one derived from the
    trigger time."""
    from datetime import UTC, datetime

    from kafkalab.airflow.callbacks import record_task_failure
    from kafkalab.airflow.run_ids import context_lab_run_id

    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(tmp_path / "data"))
    ctx = {"dag": _Named(dag_id="nightly_latency_regression"),
           "dag_run": _Named(run_id="manual__2026-11-22T10:11:12+00:00",
                             logical_date=datetime(2026, 11, 18, tzinfo=UTC)),
           "task_instance": _Named(task_id="measure_cell", map_index=3, try_number=1),
           "exception": ValueError("broker gone")}
    lab_run = context_lab_run_id(ctx)
    assert lab_run == "nightly-20261118T000000Z"
    record_task_failure(ctx)
    assert (tmp_path / "data" / "runs" / lab_run / "task-failures.jsonl").is_file()
    sent: list[str | None] = []
    monkeypatch.setattr(AlertWebhookConnection, "settings",
                        lambda self: AlertWebhook("https://hooks.example/T/X", "generic"))
    monkeypatch.setattr(kafkalab.alerts, "alert_run_failed",
                        lambda webhook, dag_id, run_id, error, **kw: sent.append(run_id) or {})
    on_failure_alert({**ctx, "reason": "task_failure"})
    assert sent == [lab_run]


def test_a_re_run_night_announces_its_own_failure_not_the_earlier_runs(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Two DAG runs of one night write one lab run (one lab run per night): the second
    run's alert names its own first failure, never the first run's, which stays recorded."""
    from datetime import UTC, datetime

    from kafkalab.airflow.callbacks import failures_path, first_failure, record_task_failure
    from kafkalab.store import LabData

    monkeypatch.setenv("KAFKALAB_DATA_DIR", str(tmp_path / "data"))
    night = datetime(2026, 11, 18, tzinfo=UTC)

    def ctx(airflow_run_id: str, task_id: str, exc: Exception | None) -> dict[str, Any]:
        return {"dag": _Named(dag_id="nightly_latency_regression"),
                "dag_run": _Named(run_id=airflow_run_id, logical_date=night),
                "task_instance": _Named(task_id=task_id, map_index=-1, try_number=1),
                "exception": exc}

    first_run, second_run = ("manual__2026-11-22T10:11:12+00:00",
                             "manual__2026-11-29T10:11:12+00:00")
    record_task_failure(ctx(first_run, "check_cluster", ValueError("broker gone")))
    record_task_failure(ctx(second_run, "measure_cell", ValueError("cell broke")))
    lab = LabData()
    assert len(failures_path(lab, "nightly-20261118T000000Z").read_text().splitlines()) == 2
    earlier, _ = first_failure(lab, "nightly-20261118T000000Z", first_run)
    assert earlier is not None and earlier["task_id"] == "check_cluster"
    sent: list[str] = []
    monkeypatch.setattr(AlertWebhookConnection, "settings",
                        lambda self: AlertWebhook("https://hooks.example/T/X", "generic"))
    monkeypatch.setattr(kafkalab.alerts, "alert_run_failed",
                        lambda webhook, dag_id, run_id, error, **kw: sent.append(error) or {})
    on_failure_alert({**ctx(second_run, "verify_outcome", None), "reason": "task_failure"})
    assert sent == ["task measure_cell failed first: ValueError: cell broke"]
