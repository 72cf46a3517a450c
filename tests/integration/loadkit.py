"""What the load engine's integration tests share (``test_load.py`` and
``test_load_timing.py``; their ``desc`` fixture is in ``conftest.py``): one load cell run from
start to finish, and where its files are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from kafkalab.load import files
from kafkalab.load.cell import run_load_cell
from kafkalab.load.run import LoadRequest, finish_load_run, start_load_run
from kafkalab.load.spec import LoadCellSpec


def cell_dir(data: Path, run_id: str) -> Path:
    """The one cell directory of run ``run_id``."""
    (cell,) = files.run_cell_dirs(data, run_id)
    return cell


def receipts(cell: Path) -> Any:
    """A cell's receipts as one DataFrame."""
    return pq.read_table([str(p) for p in sorted(cell.glob("receipts-*.parquet"))]).to_pandas()


def one_cell(data: Path, desc: Path, spec: LoadCellSpec, run_id: str) -> dict[str, Any]:
    """Run ``spec`` as the only cell of run ``run_id``; its summary."""
    start_load_run(LoadRequest(cells=[spec], data_dir=data, descriptor_path=desc, run_id=run_id))
    try:
        return run_load_cell(data, run_id, spec, desc)
    finally:
        finish_load_run(data, run_id)
