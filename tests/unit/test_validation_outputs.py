"""The validation job's own outputs that need no Spark: the offline HTML summary and the
result file (spark_jobs/validate_metrics.py)."""

from __future__ import annotations

import json
from pathlib import Path

import spark_jobs._session as shared
import spark_jobs.validate_metrics as vm


def test_html_summary_is_self_contained() -> None:
    doc = {
        "run_id": "r<1>", "validated_at": "2026-11-22T00:00:00+00:00", "success": False,
        "durable_profiles": ["durability"], "data_docs_index": "docs/index.html",
        "suites": {"aggregates": {"success": False, "statistics": {
            "evaluated_expectations": 2, "successful_expectations": 1,
            "unsuccessful_expectations": 1, "success_percent": 50.0}}},
        "failed_expectations": [{"suite": "aggregates", "column": "counts_match_raw_ok",
                                 "expectation_type": "expect_column_values_to_be_in_set",
                                 "summary": "a <b> summary"}],
    }
    page = vm.render_html(doc)
    assert "http://" not in page and "https://" not in page and "<link" not in page
    assert "a &lt;b&gt; summary" in page and "r&lt;1&gt;" in page


def test_write_json_atomic(tmp_path: Path) -> None:
    target = tmp_path / "v" / "r.json"
    shared.write_json_atomic(str(target), {"success": True})
    shared.write_json_atomic(str(target), {"success": False})
    assert json.loads(target.read_text()) == {"success": False}
    assert [p.name for p in target.parent.iterdir()] == ["r.json"]
