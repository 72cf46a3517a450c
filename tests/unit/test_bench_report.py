"""Part (h) of the bench (``tools.bench.report``) on a tiny fabricated history: every timing
is there at each size, the whole-report timings only up to their cap, the growth compares
the sizes, the scratch is removed, and ``--only report`` is a known part. Never a time bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.bench.__main__ import PARTS, _parser
from tools.bench.report import CELLS, ReportBenchConfig, bench_report, print_report

TIMINGS = {"report_newest", "spectra_newest", "spectra_all", "change_points_newest",
           "export_prometheus"}
ALL_PAGES = {"report_all_pages", "change_points_all_pages"}


def test_report_part_times_every_piece_per_history_size(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    work = tmp_path / "report"
    cfg = ReportBenchConfig(nights=(2, 1), samples_per_cell=30, repeats=2,
                            all_pages_max_nights=1)
    result = bench_report(work, cfg)
    assert not work.exists()  # scratch removed
    assert [s["nights"] for s in result["sizes"]] == [1, 2]  # grown in order
    small, big = result["sizes"]
    assert set(small["timings"]) == TIMINGS | ALL_PAGES
    assert set(big["timings"]) == TIMINGS  # above the cap: the whole report is not timed
    assert big["all_pages_timed"] is False and small["all_pages_timed"] is True
    for size in result["sizes"]:
        assert size["cells"] == len(CELLS) == 10
        assert size["spectrum_reads_all"] == size["nights"] * len(CELLS)
        assert size["spectrum_reads_newest"] == min(size["nights"], 6) * len(CELLS)
        assert size["trend_series"] > 0
        for t in size["timings"].values():
            assert len(t["runs_s"]) == 2
            assert t["min_s"] == min(t["runs_s"]) and t["min_s"] <= t["median_s"]
            assert t["median_s_per_night"] == pytest.approx(t["median_s"] / size["nights"])
        assert size["html"]["newest_page_bytes"] > 0 and size["prom_bytes"] > 0
        assert size["samples_per_message_cell"] > 0
    assert small["html"]["all_pages_bytes"] > small["html"]["newest_page_bytes"]
    assert set(result["growth"]) == TIMINGS  # the all-pages timings exist at one size only
    assert result["growth"]["report_newest"]["nights"] == [1, 2]
    print_report(result)
    out = capsys.readouterr().out
    assert "(h) report cost" in out and "not timed" in out


def test_only_report_is_a_part() -> None:
    assert "report" in PARTS
    args = _parser().parse_args(["--only", "report", "--report-nights", "7,30"])
    assert args.only == frozenset({"report"}) and args.report_nights == [7, 30]
