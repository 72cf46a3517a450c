"""Drift detection over the aggregates of successive runs.

For every series ``(scenario, client, payload, profile, metric)`` the latest run is compared
with a baseline window made of the ``window_runs`` most recent *earlier* runs of the same
series (ordered by run start). The rule is robust to outliers:

* baseline = median of the window; spread = ``1.4826 * MAD`` (MAD = median absolute
  deviation from the median; the factor makes it estimate a normal standard deviation);
* ``robust_z = (latest - median) / spread``;
* a series drifts when the latest value is beyond ``median ± k_mad * spread`` in the
  metric's bad direction **and** ``|latest - median| / |median| >= min_relative_change``.
  Both conditions are needed: a noisy series needs a large z, a zero-spread series needs a
  relative change that matters;
* zero baseline (median = 0, e.g. ``lost_count``): the relative change is undefined, so the
  latest value drifts when it is worse than 0 by more than ``min_absolute_change``
  (default 0: *any* increase from 0 is a drift); ``change_pct`` is then null;
* confidence = ``1 - exp(-|robust_z| / k_mad)`` in [0, 1] (0.63 at the threshold, 0.95 at
  3x the threshold); 1.0 when the spread is 0 and the value moved (``robust_z`` null).

The whole schema of a drift record is in ``docs/drift-and-alerts.md``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kafkalab.errors import ConfigError

MAD_SCALE = 1.4826
"""Scale factor turning a MAD into a consistent estimate of a normal standard deviation."""

SERIES_COLUMNS: tuple[str, ...] = ("scenario", "client", "payload", "profile")
"""Columns that, with the metric name, identify a series."""

DRIFT_COLUMNS: tuple[str, ...] = (
    "run_id",
    "series_key",
    "scenario",
    "client",
    "payload",
    "profile",
    "metric",
    "direction",
    "baseline_value",
    "baseline_mad",
    "baseline_runs",
    "latest_value",
    "change_pct",
    "robust_z",
    "confidence",
    "is_drift",
    "verdict",
    "broker_is_emulator",
)
"""Columns of a drift record, in order."""

Direction = Literal["higher_is_worse", "lower_is_worse"]
Verdict = Literal["drift", "ok", "insufficient_history", "improved"]

_RUN_ID_TS = re.compile(r"^(\d{8}T\d{6}Z)")


# --------------------------------------------------------------------------- config


class DriftDefaults(BaseModel):
    """Default thresholds, used for every metric that does not override them."""

    model_config = ConfigDict(extra="forbid")

    window_runs: int = Field(default=7, ge=1)
    min_baseline_runs: int = Field(default=3, ge=1)
    k_mad: float = Field(default=3.0, gt=0)
    min_relative_change: float = Field(default=0.2, ge=0)
    min_absolute_change: float = Field(default=0.0, ge=0)


class MetricRule(BaseModel):
    """Per-metric settings; any threshold left out falls back to :class:`DriftDefaults`."""

    model_config = ConfigDict(extra="forbid")

    direction: Direction = "higher_is_worse"
    window_runs: int | None = Field(default=None, ge=1)
    min_baseline_runs: int | None = Field(default=None, ge=1)
    k_mad: float | None = Field(default=None, gt=0)
    min_relative_change: float | None = Field(default=None, ge=0)
    min_absolute_change: float | None = Field(default=None, ge=0)


class ResolvedRule(BaseModel):
    """A metric's rule with every threshold filled in."""

    model_config = ConfigDict(frozen=True)

    metric: str
    direction: Direction
    window_runs: int
    min_baseline_runs: int
    k_mad: float
    min_relative_change: float
    min_absolute_change: float


class AlertSettings(BaseModel):
    """Settings of the alert de-duplication (see :mod:`kafkalab.alerts`)."""

    model_config = ConfigDict(extra="forbid")

    worsen_margin_pct: float = Field(default=10.0, ge=0)


def _default_metrics() -> dict[str, MetricRule]:
    return {
        "e2e_latency_ms_p50": MetricRule(),
        "e2e_latency_ms_p99": MetricRule(min_relative_change=0.25),
        "publish_latency_ms_p99": MetricRule(min_relative_change=0.25),
        "first_message_subscribe_ms": MetricRule(),
        "throughput_msgs_per_s": MetricRule(direction="lower_is_worse"),
        "lost_count": MetricRule(min_absolute_change=0.0),
    }


class DriftConfig(BaseModel):
    """The validated content of ``include/drift.yaml``."""

    model_config = ConfigDict(extra="forbid")

    defaults: DriftDefaults = Field(default_factory=DriftDefaults)
    metrics: dict[str, MetricRule] = Field(default_factory=_default_metrics)
    alerts: AlertSettings = Field(default_factory=AlertSettings)

    def rule(self, metric: str) -> ResolvedRule:
        """Return the rule of ``metric`` with defaults filled in."""
        m = self.metrics[metric]
        d = self.defaults

        def pick(name: str) -> Any:
            value = getattr(m, name)
            return getattr(d, name) if value is None else value

        return ResolvedRule(
            metric=metric,
            direction=m.direction,
            window_runs=pick("window_runs"),
            min_baseline_runs=pick("min_baseline_runs"),
            k_mad=pick("k_mad"),
            min_relative_change=pick("min_relative_change"),
            min_absolute_change=pick("min_absolute_change"),
        )


def default_config_path() -> Path:
    """Where the drift config lives: ``$KAFKALAB_DRIFT_CONFIG`` or ``<repo>/include/drift.yaml``."""
    env = os.environ.get("KAFKALAB_DRIFT_CONFIG")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "include" / "drift.yaml"


def parse_drift_config(data: Mapping[str, Any] | None, source: str = "drift config") -> DriftConfig:
    """Validate a mapping (the parsed YAML) into a :class:`DriftConfig`.

    Raises:
        ConfigError: naming the offending key, e.g. ``metrics.lost_count.k_mad``.
    """
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: top level must be a mapping, got {type(data).__name__}")
    try:
        return DriftConfig.model_validate(dict(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ())) or "<root>"
        msg = first.get("msg", "invalid value")
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ConfigError(f"{source}: {loc}: {msg}{more}") from None


def load_drift_config(path: str | os.PathLike[str] | None = None) -> DriftConfig:
    """Load and validate the drift config YAML at ``path`` (default: :func:`default_config_path`).

    Raises:
        ConfigError: the file is missing, is not YAML, or has a bad key or value.
    """
    p = Path(path) if path is not None else default_config_path()
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read drift config ({exc.strerror or exc})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML ({exc})") from None
    return parse_drift_config(data, source=str(p))


def load_drift_config_or_default(path: str | os.PathLike[str] | None = None) -> DriftConfig:
    """Like :func:`load_drift_config`, but built-in defaults when the file does not exist."""
    p = Path(path) if path is not None else default_config_path()
    if not p.exists():
        return DriftConfig()
    return load_drift_config(p)


# --------------------------------------------------------------------------- history


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary file in the same directory + ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def _read_manifests(data_dir: Path) -> pd.DataFrame:
    """Run id, start time and status from ``runs/*.json`` (unreadable files are skipped)."""
    rows: list[dict[str, Any]] = []
    runs_dir = data_dir / "runs"
    if runs_dir.is_dir():
        for f in sorted(runs_dir.glob("*.json")):
            try:
                m = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if not isinstance(m, dict):
                continue
            rows.append(
                {
                    "run_id": str(m.get("run_id") or f.stem),
                    "run_started_at": m.get("started_at"),
                    "run_status": m.get("status"),
                }
            )
    df = pd.DataFrame(rows, columns=["run_id", "run_started_at", "run_status"])
    df["run_started_at"] = pd.to_datetime(df["run_started_at"], utc=True, errors="coerce")
    return df.drop_duplicates("run_id", keep="last")


def _read_aggregates(agg_dir: Path) -> pd.DataFrame:
    """All aggregate Parquet files under ``agg_dir`` as one DataFrame (hive ``run_id``)."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    part = ds.partitioning(pa.schema([("run_id", pa.string())]), flavor="hive")
    try:
        dataset = ds.dataset(str(agg_dir), format="parquet", partitioning=part)
        table = dataset.to_table()
        return table.to_pandas()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError):
        pass
    # Files with diverging schemas (a column null in one run, double in another): read them
    # one by one and let pandas unify.
    frames: list[pd.DataFrame] = []
    for f in sorted(agg_dir.rglob("*.parquet")):
        if any(p.startswith((".", "_")) for p in f.relative_to(agg_dir).parts):
            continue
        try:
            df = pq.read_table(f).to_pandas()
        except (OSError, pa.ArrowException):
            continue
        rid = next(
            (p.split("=", 1)[1] for p in f.relative_to(agg_dir).parts if p.startswith("run_id=")),
            None,
        )
        if rid is not None:
            df["run_id"] = rid
        frames.append(df)
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def load_history(data_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """Read every run's aggregates under ``<data_dir>/aggregates`` into one DataFrame.

    Adds ``run_started_at`` (UTC timestamp) and ``run_status`` from the run manifests when
    they exist (null otherwise). Returns an empty DataFrame when there are no aggregates.
    """
    root = Path(data_dir)
    agg_dir = root / "aggregates"
    if not agg_dir.is_dir() or not any(agg_dir.rglob("*.parquet")):
        return pd.DataFrame()
    df = _read_aggregates(agg_dir)
    if df.empty:
        return df
    if "run_id" in df.columns:
        df["run_id"] = df["run_id"].astype(str)
    manifests = _read_manifests(root)
    for col in ("run_started_at", "run_status"):
        if col in df.columns:
            df = df.drop(columns=[col])
    df = df.merge(manifests, on="run_id", how="left")
    return df


def run_order(history: pd.DataFrame) -> list[str]:
    """Run ids of ``history`` from oldest to newest.

    The order key is the manifest's ``run_started_at``; when missing, the timestamp prefix of
    the run id (``YYYYMMDDTHHMMSSZ-...``), then ``run_date``; ties are broken by run id.
    """
    if history.empty or "run_id" not in history.columns:
        return []
    keys: dict[str, pd.Timestamp] = {}
    for rid, grp in history.groupby("run_id", sort=False):
        ts: Any = pd.NaT
        if "run_started_at" in grp.columns:
            ts = pd.to_datetime(grp["run_started_at"], utc=True, errors="coerce").min()
        if pd.isna(ts):
            m = _RUN_ID_TS.match(str(rid))
            if m:
                ts = pd.to_datetime(m.group(1), format="%Y%m%dT%H%M%SZ", utc=True, errors="coerce")
        if pd.isna(ts) and "run_date" in grp.columns:
            ts = pd.to_datetime(grp["run_date"].astype(str), utc=True, errors="coerce").min()
        keys[str(rid)] = ts
    far_past = pd.Timestamp("1970-01-01", tz="UTC")
    return sorted(keys, key=lambda r: (far_past if pd.isna(keys[r]) else keys[r], r))


# --------------------------------------------------------------------------- detection


def series_key(scenario: Any, client: Any, payload: Any, profile: Any, metric: str) -> str:
    """The stable string id of a series: ``scenario|client|payload|profile|metric``."""
    parts = [scenario, client, payload, profile, metric]
    return "|".join("" if _isnull(p) else str(p) for p in parts)


def _isnull(v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _as_bool(v: Any) -> bool:
    if _isnull(v):
        return False
    if isinstance(v, str):
        return v.strip().lower() in ("true", "1", "yes")
    return bool(v)


def _float_or_none(v: Any) -> float | None:
    if _isnull(v):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _median(values: list[float]) -> float:
    return float(pd.Series(values, dtype="float64").median())


def evaluate_series(
    baseline: list[float], latest: float, rule: ResolvedRule
) -> dict[str, Any]:
    """Apply the robust rule to one series (pure; see the module docstring).

    Args:
        baseline: values of the earlier runs in the window (oldest first).
        latest: the latest run's value.
        rule: the metric's resolved thresholds.

    Returns:
        A dict with baseline_value, baseline_mad, baseline_runs, change_pct, robust_z,
        confidence, is_drift and verdict.
    """
    n = len(baseline)
    out: dict[str, Any] = {
        "baseline_value": None,
        "baseline_mad": None,
        "baseline_runs": n,
        "latest_value": latest,
        "change_pct": None,
        "robust_z": None,
        "confidence": 0.0,
        "is_drift": False,
        "verdict": "insufficient_history",
    }
    if n == 0:
        return out
    med = _median(baseline)
    mad = _median([abs(v - med) for v in baseline])
    spread = MAD_SCALE * mad
    delta = latest - med
    out["baseline_value"] = med
    out["baseline_mad"] = mad
    if med != 0:
        out["change_pct"] = delta / abs(med) * 100.0
    if spread > 0:
        z: float | None = delta / spread
        confidence = 1.0 - math.exp(-abs(delta / spread) / rule.k_mad)
    else:
        z = 0.0 if delta == 0 else None
        confidence = 0.0 if delta == 0 else 1.0
    out["robust_z"] = z
    out["confidence"] = confidence
    if n < rule.min_baseline_runs:
        return out

    sign = 1.0 if rule.direction == "higher_is_worse" else -1.0
    bad_delta = sign * delta  # > 0 means worse
    if med == 0:
        # Zero baseline: relative change undefined; any move beyond min_absolute_change in
        # the bad (or good) direction decides.
        beyond = abs(delta) > rule.min_absolute_change
        if beyond and bad_delta > 0:
            out["verdict"], out["is_drift"] = "drift", True
        elif beyond and bad_delta < 0:
            out["verdict"] = "improved"
        else:
            out["verdict"] = "ok"
        return out
    beyond_mad = abs(delta) > rule.k_mad * spread
    relevant = abs(delta) / abs(med) >= rule.min_relative_change
    if beyond_mad and relevant and bad_delta > 0:
        out["verdict"], out["is_drift"] = "drift", True
    elif beyond_mad and relevant and bad_delta < 0:
        out["verdict"] = "improved"
    else:
        out["verdict"] = "ok"
    return out


def _empty_records() -> pd.DataFrame:
    df = pd.DataFrame({c: pd.Series(dtype="object") for c in DRIFT_COLUMNS})
    return _coerce_records(df)


def _coerce_records(df: pd.DataFrame) -> pd.DataFrame:
    for c in ("baseline_value", "baseline_mad", "latest_value", "change_pct", "robust_z",
              "confidence"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    df["baseline_runs"] = pd.to_numeric(df["baseline_runs"], errors="coerce").fillna(0)
    df["baseline_runs"] = df["baseline_runs"].astype("int64")
    df["is_drift"] = df["is_drift"].astype(bool)
    df["broker_is_emulator"] = df["broker_is_emulator"].astype(bool)
    for c in ("run_id", "series_key", "scenario", "client", "payload", "profile", "metric",
              "direction", "verdict"):
        df[c] = df[c].astype("string")
    return df[list(DRIFT_COLUMNS)].reset_index(drop=True)


def detect_drift(
    history: pd.DataFrame, config: DriftConfig, latest_run_id: str | None = None
) -> pd.DataFrame:
    """Compare the latest run of every series with its baseline window (pure function).

    Args:
        history: aggregates of all runs (as returned by :func:`load_history`); missing columns
            and null values are tolerated (a metric absent from the latest run gives no record).
        config: thresholds and the metrics to check.
        latest_run_id: the run to judge; default the newest run of ``history``.

    Returns:
        One row per series of the latest run and configured metric, columns
        :data:`DRIFT_COLUMNS`. The baseline of a series only uses runs on the same kind of
        broker (emulator or not) as the latest value, and skips runs whose manifest status is
        ``failed``.
    """
    order = run_order(history)
    if not order:
        return _empty_records()
    if latest_run_id is None:
        latest_run_id = order[-1]
    if latest_run_id not in order:
        return _empty_records()
    pos = {rid: i for i, rid in enumerate(order)}
    df = history.copy()
    df["run_id"] = df["run_id"].astype(str)
    df["_pos"] = df["run_id"].map(pos)
    for c in SERIES_COLUMNS:
        if c not in df.columns:
            df[c] = None
    df["_emu"] = (
        df["broker_is_emulator"].map(_as_bool) if "broker_is_emulator" in df.columns else False
    )
    status = df["run_status"] if "run_status" in df.columns else pd.Series(None, index=df.index)
    df["_failed"] = status.astype("string").str.lower().eq("failed").fillna(False).astype(bool)
    latest_pos = pos[latest_run_id]
    key_cols = [*SERIES_COLUMNS, "_emu"]
    # Group keys must not be NaN for groupby; use a filled copy.
    for c in SERIES_COLUMNS:
        df[c] = df[c].astype("object").where(df[c].notna(), "")

    records: list[dict[str, Any]] = []
    latest_rows = df[df["_pos"] == latest_pos]
    earlier = df[(df["_pos"] < latest_pos) & ~df["_failed"]]
    for metric in config.metrics:
        if metric not in df.columns:
            continue
        rule = config.rule(metric)
        values = pd.to_numeric(df[metric], errors="coerce")
        lat = latest_rows.assign(_v=values.loc[latest_rows.index]).dropna(subset=["_v"])
        if lat.empty:
            continue
        lat_series = lat.groupby(key_cols, sort=True)["_v"].median()
        base = earlier.assign(_v=values.loc[earlier.index]).dropna(subset=["_v"])
        # One value per (series, run): the median if a run has several rows.
        per_run = base.groupby([*key_cols, "_pos"], sort=True)["_v"].median()
        for key, latest_value in lat_series.items():
            k = key if isinstance(key, tuple) else (key,)
            try:
                hist = per_run.loc[k]
            except KeyError:
                hist = pd.Series(dtype="float64")
            window = [float(v) for v in hist.sort_index().tail(rule.window_runs).tolist()]
            res = evaluate_series(window, float(latest_value), rule)
            scenario, client, payload, profile, emu = k
            records.append(
                {
                    "run_id": latest_run_id,
                    "series_key": series_key(scenario, client, payload, profile, metric),
                    "scenario": scenario,
                    "client": client,
                    "payload": payload,
                    "profile": profile,
                    "metric": metric,
                    "direction": rule.direction,
                    "broker_is_emulator": bool(emu),
                    **res,
                }
            )
    if not records:
        return _empty_records()
    return _coerce_records(pd.DataFrame.from_records(records))


# --------------------------------------------------------------------------- storage


def drift_path(data_dir: str | os.PathLike[str], run_id: str) -> Path:
    """``<data_dir>/drift/run_id=<run_id>/drift.parquet``."""
    return Path(data_dir) / "drift" / f"run_id={run_id}" / "drift.parquet"


def write_drift(
    records: pd.DataFrame, data_dir: str | os.PathLike[str], run_id: str
) -> Path:
    """Write a run's drift records atomically; a re-run replaces the previous file."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    df = records.copy() if not records.empty else _empty_records()
    for c in DRIFT_COLUMNS:
        if c not in df.columns:
            df[c] = None
    df = _coerce_records(df)
    table = pa.Table.from_pandas(df, preserve_index=False)
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return atomic_write_bytes(drift_path(data_dir, run_id), buf.getvalue())


def read_drift(data_dir: str | os.PathLike[str], run_id: str) -> pd.DataFrame | None:
    """A run's stored drift records, or None when the file does not exist."""
    import pyarrow.parquet as pq

    p = drift_path(data_dir, run_id)
    if not p.exists():
        return None
    df = pq.read_table(p).to_pandas()
    for c in DRIFT_COLUMNS:
        if c not in df.columns:
            df[c] = None
    return df


def run_drift(
    data_dir: str | os.PathLike[str],
    run_id: str | None = None,
    config_path: str | os.PathLike[str] | None = None,
) -> tuple[pd.DataFrame, Path | None]:
    """Load history, detect drift for ``run_id`` (default newest) and write the records.

    Returns the records and the written path (None when there is no history at all).
    """
    config = load_drift_config_or_default(config_path)
    history = load_history(data_dir)
    if history.empty:
        return _empty_records(), None
    order = run_order(history)
    rid = run_id or order[-1]
    records = detect_drift(history, config, rid)
    return records, write_drift(records, data_dir, rid)


def records_to_dicts(records: pd.DataFrame) -> list[dict[str, Any]]:
    """Drift records as JSON-safe dicts (NaN -> None, numpy scalars -> Python)."""
    out: list[dict[str, Any]] = []
    if records is None or records.empty:
        return out
    for row in records.to_dict(orient="records"):
        clean: dict[str, Any] = {}
        for k, v in row.items():
            if _isnull(v):
                clean[k] = None
            elif hasattr(v, "item"):
                clean[k] = v.item()
            else:
                clean[k] = v
            if isinstance(clean[k], float) and not math.isfinite(clean[k]):
                clean[k] = None
        out.append(clean)
    return out
