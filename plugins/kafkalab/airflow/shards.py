"""The consumer shard task of a load cell (shard placement ``tasks``): an operator that
defers until its cell starts, and the trigger that watches for it.

Why deferral. A shard task of the second cell exists from the start of the run but may only
join when its cell's producer has written the plan, after the first cell. Waiting in a worker
slot could starve the cell that is measuring (its producer and shards need the slots); a
sensor in ``reschedule`` mode frees the slot but races with the executor: with Celery, the
"success" event of a rescheduled poke can arrive after the scheduler has already put the task
back to ``scheduled``, and the scheduler then fails the task ("finished with state success,
but the task instance's state attribute is scheduled"; seen in this project's e2e test). A
deferred task frees its slot and is resumed by the triggerer's event instead.

Importing this module reads no file (DAG-parse safe); the triggerer imports
:class:`ShardTurnTrigger` by its path, so the lab's ``plugins/`` must be on the triggerer's
``PYTHONPATH`` (the lab's launcher and docker-compose set it).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseOperator
from airflow.triggers.base import BaseTrigger, TriggerEvent

from kafkalab.airflow import load_tasks

POLL_S = 1.0
"""How often the trigger looks at the cell's files."""

WAIT_LIMIT = timedelta(hours=6)
"""The longest a shard task waits for its cell (the cells before it must fit in this)."""


class ShardTurnTrigger(BaseTrigger):
    """Fires when shard ``slot["shard"]`` of cell ``slot["cell_id"]`` of the load run
    ``run_id`` (in ``data_dir``) may join, or will never: any
    :func:`kafkalab.airflow.load_tasks.shard_state` other than ``wait``."""

    def __init__(self, run_id: str, slot: Mapping[str, Any], token: str, data_dir: str,
                 poll_s: float = POLL_S) -> None:
        super().__init__()
        self.run_id, self.slot, self.token = run_id, dict(slot), token
        self.data_dir, self.poll_s = data_dir, poll_s

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"run_id": self.run_id, "slot": self.slot, "token": self.token,
                 "data_dir": self.data_dir, "poll_s": self.poll_s})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while True:
            state, _cell = await asyncio.to_thread(load_tasks.shard_state, self.run_id,
                                                   self.slot, self.token, self.data_dir)
            if state != "wait":
                yield TriggerEvent({"state": state})
                return
            await asyncio.sleep(self.poll_s)


class ConsumeLoadShardOperator(BaseOperator):
    """One consumer shard of a load cell as a task: defers until its cell's plan is up,
    then joins the start barrier and consumes until the drain ends
    (:func:`kafkalab.airflow.load_tasks.consume_load_shard`). Returns the shard's result."""

    template_fields = ("lab_run_id", "slot")

    def __init__(self, *, lab_run_id: Any, slot: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lab_run_id, self.slot = lab_run_id, slot

    def execute(self, context: Any) -> dict[str, Any]:
        from kafkalab.store import LabData

        context["shard_label"] = self.slot.get("label")
        token = context["dag_run"].run_id
        result = load_tasks.consume_load_shard(self.lab_run_id, self.slot, token=token)
        if result is None:
            self.defer(trigger=ShardTurnTrigger(self.lab_run_id, self.slot, token,
                                                str(LabData().root)),
                       method_name="execute_complete", timeout=WAIT_LIMIT)
        assert result is not None
        return result

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> dict[str, Any]:
        """Resumed by the trigger: join (or learn the cell ended without this shard)."""
        return self.execute(context)


__all__ = ["POLL_S", "WAIT_LIMIT", "ConsumeLoadShardOperator", "ShardTurnTrigger"]
