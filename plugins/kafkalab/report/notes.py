"""The words the report puts beside its figures, so that none is read as something it is not.

* what each scenario's end-to-end latency measures (:func:`measures_note`), on every table
  and chart that shows REST and Kafka side by side;
* which settings a cell actually used (:func:`settings_text`): Kafka's tool applies its own
  (hard-coded ``linger.ms=0`` and ``fetch.max.wait.ms=0``), not the profile's;
* undefined percentiles (:func:`percentile_cell`): ``n<100`` or ``censored``, never a number
  (a missing count, :func:`count_cell`, likewise says why where it is known);
* the closed loop's message rate (:data:`MESSAGE_RATE_NOTE`): ≈ 1 / mean latency, not capacity.

Pure functions of their arguments, returning escaped HTML or plain text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from kafkalab.catalog import SCENARIOS, scenario_spec
from kafkalab.report.format import MISSING, esc, fmt_count, fmt_num
from kafkalab.values import as_float, is_missing

TOOL_HARD_CODED: dict[str, str] = {"linger.ms": "0", "fetch.max.wait.ms": "0"}
"""Settings Kafka's EndToEndLatency tool hard-codes, whatever the profile says."""

SETTINGS_SHOWN: dict[str, tuple[str, ...]] = {
    "acks": ("acks", "producer.acks"),
    "linger.ms": ("linger.ms", "producer.linger.ms", "producer.linger_ms", "linger_ms"),
    "fetch.max.wait.ms": ("fetch.max.wait.ms", "consumer.fetch.max.wait.ms",
                          "consumer.fetch.wait.max.ms", "consumer.fetch_max_wait_ms",
                          "fetch.wait.max.ms", "fetch_max_wait_ms"),
}
"""The client settings a table shows, each under one name, with the keys each client
records it under (the Java clients' ``fetch.max.wait.ms`` is librdkafka's
``fetch.wait.max.ms`` and kafka-python's ``fetch_max_wait_ms``); every recorded setting is
in the cell's hover text."""

HTTP_SHOWN: tuple[str, ...] = ("http.method", "http.timeout_s")
"""What a table shows of an HTTP client's settings."""

MEASURES: dict[str, str] = {
    "rest": "HTTP (rest) e2e is one hop: client → server process. Its publish latency is n/a; "
            "its request/response round trip is shown separately (rt).",
    "kafka": "Kafka e2e is two hops: producer → broker log append (+ replication when rf > 1) "
             "→ consumer fetch.",
    "tool": "Kafka's tool (EndToEndLatency) times the same two hops in series (ack, then fetch) "
            "with its own settings, not the profile's; the serial harness does the same.",
}
"""What each kind of scenario's e2e latency measures."""

MEASURES_SHORT = "REST e2e: 1 hop (client → server) · Kafka e2e: 2 hops (producer → broker → consumer)"
"""The one-line form drawn inside a chart that plots REST and Kafka together."""

MESSAGE_RATE_NOTE = ("Message rate: messages received per second in a closed loop (one message "
                     "in flight), ≈ 1 / mean latency; not the broker's capacity.")


def scenario_kind(name: str) -> str:
    """``rest`` (not Kafka), ``tool`` (Kafka's own tool) or ``kafka`` (a harness client);
    a name the catalog does not know (an old run's) is judged by its name."""
    if name in SCENARIOS:
        spec = scenario_spec(name)
        if not spec.uses_kafka:
            return "rest"
        return "kafka" if spec.per_message else "tool"
    if name in ("rest", "http"):
        return "rest"
    return "tool" if name.startswith("jvm") else "kafka"


def is_tool(name: str) -> bool:
    """Whether a scenario is Kafka's tool (its figures are the tool's printed summary)."""
    return scenario_kind(name) == "tool"


def mixes_rest_and_kafka(scenarios: Iterable[str]) -> bool:
    """Whether REST and Kafka figures stand side by side."""
    kinds = {scenario_kind(str(s)) for s in scenarios}
    return "rest" in kinds and bool(kinds & {"kafka", "tool"})


def measures_note(scenarios: Iterable[str]) -> str:
    """The line above a table or chart that shows REST and Kafka side by side (``""`` when
    it does not): what each one's e2e measures."""
    names = [str(s) for s in scenarios]
    if not mixes_rest_and_kafka(names):
        return ""
    kinds = {scenario_kind(s) for s in names} | {"kafka"}  # the tool's hops are Kafka's too
    lines = [MEASURES[k] for k in ("rest", "kafka", "tool") if k in kinds]
    return ('<div class="measures" role="note"><strong>Not the same path:</strong> '
            + " ".join(esc(x) for x in lines) + "</div>")


def _settings_dict(client_settings: Any) -> dict[str, str]:
    if is_missing(client_settings):
        return {}
    if isinstance(client_settings, Mapping):
        raw: Any = client_settings
    else:
        try:
            raw = json.loads(str(client_settings))
        except ValueError:
            return {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def settings_text(client_settings: Any, scenario: str = "") -> str:
    """The settings a cell used, short: ``acks=1, linger.ms=0, fetch.max.wait.ms=0``.

    ``client_settings``: the aggregate's JSON object (or a dict). Kafka's tool without
    recorded settings (an old run) shows what it always hard-codes; other cells without
    them show ``—``; an HTTP client shows :data:`HTTP_SHOWN`.
    """
    s = _settings_dict(client_settings)
    if not s and is_tool(scenario):
        s = dict(TOOL_HARD_CODED)
    shown = []
    for name, keys in SETTINGS_SHOWN.items():
        value = next((s[k] for k in keys if k in s), None)
        if value is not None:
            shown.append(f"{name}={value}")
    if not shown:  # an HTTP client: its method and timeout
        shown = [f"{k.removeprefix('http.')}={s[k]}" for k in HTTP_SHOWN if k in s]
    return ", ".join(shown) if shown else MISSING


def settings_title(client_settings: Any) -> str:
    """Every recorded setting, for a hover text (``""`` when none were recorded)."""
    s = _settings_dict(client_settings)
    return ", ".join(f"{k}={v}" for k, v in sorted(s.items()))


def profile_text(profile: str, scenario: str) -> str:
    """What the profile column says: the profile, or for Kafka's tool that it used its own
    settings (it never applies a profile's linger or fetch settings)."""
    return "own settings (tool)" if is_tool(scenario) else profile


def percentile_cell(value: Any, reason: str | None) -> str:
    """A table cell's text for a percentile: the number, else why it is undefined
    (``n<100``, ``censored``), else ``—``."""
    f = as_float(value)
    if f is not None:
        return esc(fmt_num(f))
    if reason:
        return f'<span class="undef" title="undefined: {esc(reason)}">{esc(reason)}</span>'
    return esc(MISSING)


def count_cell(value: Any, reason: str | None = None) -> str:
    """A table cell's text for a count: ``1,234``, else why it is missing (``reason``, as
    :func:`percentile_cell` shows it), else ``—``."""
    if as_float(value) is not None:
        return esc(fmt_count(value))
    return percentile_cell(None, reason)


def ci_cell(low: Any, high: Any) -> str:
    """A 95 % interval ``lo–hi``; with one end open (too few values, or censored) the
    one-sided bound it still gives: ``≥ lo`` or ``≤ hi``."""
    lo, hi = as_float(low), as_float(high)
    if lo is None and hi is None:
        return esc(MISSING)
    if hi is None:
        return esc(f"≥ {fmt_num(lo)}")
    if lo is None:
        return esc(f"≤ {fmt_num(hi)}")
    return esc(f"{fmt_num(lo)}–{fmt_num(hi)}")


__all__ = [
    "HTTP_SHOWN",
    "MEASURES",
    "MEASURES_SHORT",
    "MESSAGE_RATE_NOTE",
    "SETTINGS_SHOWN",
    "TOOL_HARD_CODED",
    "ci_cell",
    "count_cell",
    "is_tool",
    "measures_note",
    "mixes_rest_and_kafka",
    "percentile_cell",
    "profile_text",
    "scenario_kind",
    "settings_text",
    "settings_title",
]
