"""The report's "Version matrices" section: a judged matrix's versions side by side (each
linking to its run's page, a regression marked), a matrix not judged yet named as such, and
nothing at all without matrices."""

from __future__ import annotations

from pathlib import Path

from kafkalab.report.build import build_report
from kafkalab.report.versions_section import matrices_section
from kafkalab.store import LabData, atomic_write_json
from kafkalab.versions.verdict import matrix_verdict, write_verdict
from tests.unit.test_versions_matrix import FIRSTS, _matrix, _with_startup


def test_a_judged_matrix_shows_its_versions_side_by_side(tmp_path: Path) -> None:
    lab = LabData(tmp_path)
    out = lab.reports_dir
    assert matrices_section(lab, out) == ""
    mid = _matrix(tmp_path, {"4.1.2": [10.0, 11.0, 10.5], "4.4.0": [20.0, 21.0, 19.0]})
    html = matrices_section(lab, out)
    assert "not judged yet" in html and f"kafkalab versions verdict {mid}" in html
    write_verdict(tmp_path, matrix_verdict(tmp_path, mid))
    html = matrices_section(lab, out)
    assert f'data-matrix="{mid}"' in html and "Kafka 4.1.2</a> (baseline)" in html
    assert 'href="m1-kafka-4.4.0/index.html"' in html
    assert 'data-metric="e2e_p99_ms"' in html
    assert '<span class="fail" title="MAD rule over 3 rounds of Kafka 4.1.2">regressed *</span>' \
        in html
    assert "+90.5 %" in html and "4.1.2: 3, 4.4.0: 3" in html


def test_the_overview_carries_the_section(tmp_path: Path) -> None:
    mid = _matrix(tmp_path, {"4.1.2": [10.0], "4.4.0": [10.0]})
    atomic_write_json(LabData(tmp_path).matrix_verdict_path(mid),
                      {**matrix_verdict(tmp_path, mid).to_dict(), "judged_at": "now"})
    index = build_report(tmp_path).read_text()
    assert '<section id="versions">' in index and "insufficient_history" in index


def test_first_message_rows_link_the_start_up_runs_and_name_failed_probes(
        tmp_path: Path) -> None:
    lab = LabData(tmp_path)
    mid = _matrix(tmp_path, {"4.1.2": [10.0, 11.0, 10.5], "4.4.0": [10.0, 11.0, 10.5]})
    _with_startup(tmp_path, mid, FIRSTS)
    write_verdict(tmp_path, matrix_verdict(tmp_path, mid))
    html = matrices_section(lab, lab.reports_dir)
    assert ('data-series="startup|warm/delay=0/confluent-kafka/subscribe/classic/m1" '
            'data-metric="first_record_ms"') in html
    assert "first msg warm subscribe classic m1 delay 0" in html
    assert 'href="m1-startup-4.4.0/index.html"' in html
    assert "failed probes (timed out or failed: in no median): 4.4.0 1" in html
