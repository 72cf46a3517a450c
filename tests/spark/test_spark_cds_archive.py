"""The Spark driver's class-data archive (kafkalab.spark.cds) for real: ``make setup``
recorded it (recorded here when missing), and a spark-submit with the DAGs' settings maps
it. ``-Xshare:on`` makes the JVM fail instead of quietly starting without the archive."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafkalab.paths import PACKAGE_DIR
from kafkalab.spark.cds import ensure_archive


def test_a_spark_submit_maps_the_archive(spark_submit: Any, tmp_path: Path) -> None:
    archive = ensure_archive()
    assert archive is not None and archive.is_file(), "no archive: run make setup"
    done = spark_submit(PACKAGE_DIR / "spark" / "cds_warmup.py", str(tmp_path / "scratch"),
                        java_options="-Xshare:on -Xlog:cds=info")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout + done.stderr
    assert "Unable to use shared archive" not in out
    assert str(archive) in out  # the JVM names the dynamic archive it opened
    assert (tmp_path / "scratch" / "aggregates").is_dir()
