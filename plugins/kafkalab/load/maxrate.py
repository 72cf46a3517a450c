"""The maximum sustainable rate: a step search over fixed-rate load cells.

Each step is a whole load cell (warm-up, then a window long enough to judge). A step
*passes* when

* the achieved rate is ≥ 98 % of the target;
* consumer lag is not growing at the producer's stop (``lag_growing``, see the summary);
* nothing failed: no failed, indeterminate or unsent message, no consumer missing one;
* the publish delay p99 (send − intended) is below ``publish_delay_bound_ms``;
* e2e p99 (from the intended time) is under the objective.

The search doubles the rate from ``start_rate`` until a step fails (never above what the
client budget allows), then bisects geometrically between the last pass and the first fail
until they are within 5 %. The found rate is then repeated (``repeats``, each must pass and
achieve within ±5 % of it; a single pass near the knee can be luck): if a repeat fails, 15 %
lower is tried, at most six times, and only a rate whose repeats all pass is reported.
Then 1.1× the reported rate is repeated the same way: it must fail (any repeat failing). If
it holds instead, it becomes the answer and 1.1× of it is tried (at most four climbs).

What OMB's rate controller taught (its issues: a controller that backs off on every
publish error ends stuck at 1 msg/s; one that ramps on throughput alone overshoots into a
queue it never drains): the rate here is never adjusted inside a step, every step is judged
on the intended-time latency (an overshoot shows as publish delay and growing lag at
once), and the search never goes below ``start_rate``/64 — it says "no passing rate"
instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.errors import ConfigError, RunError
from kafkalab.load.spec import LoadCellSpec, check_budget
from kafkalab.progress import Progress, noop

ACHIEVED_MIN_FRACTION = 0.98
RESOLUTION = 1.05
"""Bisection stops when the first failing rate is within 5 % of the last passing one."""
REPEAT_TOLERANCE = 0.05
OVER_FACTOR = 1.1
CONFIRM_ATTEMPTS = 6
CONFIRM_BACKOFF = 0.85
MAX_CLIMBS = 4
LOWEST_FRACTION = 1 / 64


@dataclass
class MaxRateRequest:
    payload: str = "1kb"
    encoding: str = "raw"
    acks: str | None = None
    profile: str = "default"
    partitions: int = 1
    consumers: int = 1
    start_rate: float = 1000.0
    step_duration_s: float = 6.0
    warmup_s: float = 2.0
    objective_p99_ms: float = 100.0
    publish_delay_bound_ms: float = 5.0
    repeats: int = 3
    max_steps: int = 14
    client: str = "confluent-kafka"
    data_dir: Path | None = None
    descriptor_path: Path | None = None
    run_id: str | None = None


def judge(summary: dict[str, Any], objective_p99_ms: float,
          publish_delay_bound_ms: float) -> list[str]:
    """Why a step fails (empty: it passes)."""
    reasons = []
    target = float(summary["target_rate_msgs_per_s"])
    achieved = float(summary.get("achieved_rate_msgs_per_s") or 0.0)
    if achieved < ACHIEVED_MIN_FRACTION * target:
        reasons.append(f"achieved {achieved:,.0f} < 98 % of {target:,.0f} msg/s")
    if summary.get("lag_growing"):
        reasons.append(f"lag growing ({summary.get('lag_end_msgs')} msgs at the stop)")
    errors = {k: summary.get(k) or 0 for k in ("failed_msgs", "indeterminate_msgs", "unsent_msgs",
                                               "failing_clients")}
    if any(errors.values()):
        reasons.append("errors: " + ", ".join(f"{k}={v}" for k, v in errors.items() if v))
    pub = summary.get("publish_delay_p99_ms")
    if pub is None:
        pub = summary.get("publish_delay_max_ms")
    if pub is None or pub > publish_delay_bound_ms:
        reasons.append(f"publish delay p99 {_ms(pub)} > {publish_delay_bound_ms:g} ms")
    e2e = summary.get("e2e_p99_ms")
    if e2e is None:
        reasons.append(f"e2e p99 undefined ({summary.get('e2e_p99_ms_reason')})")
    elif e2e > objective_p99_ms:
        reasons.append(f"e2e p99 {_ms(e2e)} > objective {objective_p99_ms:g} ms")
    if summary.get("status") != "complete":
        reasons.append(f"cell {summary.get('status')}")
    return reasons


def ran_out(summary: dict[str, Any]) -> str:
    """What limited a failing step: client CPU, broker CPU, or (when neither was busy) the
    latency path itself."""
    if summary.get("client_bound"):
        return f"client CPU (a load-generator process at {summary.get('max_process_cpu_frac')} of a core)"
    broker = summary.get("broker_cpu_frac")
    if broker is not None and broker > 0.8:
        return f"broker CPU ({broker:.2f} of a core)"
    host = summary.get("host_cpu_busy_frac")
    if host is not None and host > 0.9:
        return f"the host's CPUs ({host:.2f} of all cores busy: clients, broker and anything else)"
    if summary.get("lag_growing"):
        return "consumers (lag growing without a busy CPU)"
    if summary.get("saturated"):
        return "producer send path (publish delay above one send interval)"
    return "latency objective (no CPU saturated)"


def _ms(v: Any) -> str:
    return "n/a" if v is None else f"{float(v):.2f} ms"


def _round_rate(rate: float) -> float:
    """Three significant digits: steps get readable names and repeatable cell ids."""
    if rate <= 0:
        return rate
    digits = 3 - math.floor(math.log10(rate)) - 1
    return round(rate, digits) if digits > 0 else float(round(rate, digits))


def find_max_rate(req: MaxRateRequest, progress: Progress = noop) -> dict[str, Any]:
    """Run the search; returns the result document (also stored as the run's ``maxrate``
    entry in ``runs/<run_id>/maxrate.json``)."""
    from kafkalab.load.run import finish_load_run
    from kafkalab.store import LabData, atomic_write_json

    search = _Search.start(req, progress)
    try:
        last_pass, first_fail = search.bracket()
        confirmed, repeats = search.confirm(last_pass)
        confirmed, over_rate, over_fails = search.climb(confirmed)
    finally:
        finish_load_run(req.data_dir, search.run_id)
    result = _result(req, search.run_id, search.steps, confirmed, first_fail, search.cap,
                     search.wire_bytes)
    result["search_max_rate_msgs_per_s"] = last_pass
    result["repeats"] = repeats
    result["repeats_agree"] = confirmed is not None and req.repeats > 0
    result["over_rate_msgs_per_s"] = over_rate
    result["over_rate_fails"] = over_fails
    atomic_write_json(LabData(req.data_dir).run_work_dir(search.run_id) / "maxrate.json", result)
    return result


def _step_spec(req: MaxRateRequest, rate: float, trial: int = 0) -> LoadCellSpec:
    """The cell of one step at ``rate`` (``trial``: its repeat number).

    Raises:
        ConfigError: the request makes no valid cell (one line).
    """
    try:
        return LoadCellSpec(client=req.client, payload=req.payload, encoding=req.encoding,  # type: ignore[arg-type]
                            profile=req.profile, acks=req.acks, consumers=req.consumers,  # type: ignore[arg-type]
                            rate_msgs_per_s=rate, duration_s=req.step_duration_s,
                            warmup_s=req.warmup_s, partitions=req.partitions, drain_s=3.0,
                            e2e_p99_objective_ms=req.objective_p99_ms, trial=trial)
    except ValueError as exc:
        from pydantic import ValidationError

        from kafkalab.yamlio import describe_validation_error

        text = describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
        raise ConfigError(f"maxrate: {text}") from None


@dataclass
class _Search:
    """One search: its load run, the steps measured so far, and the last repeat number
    used (every repeat is a cell of its own)."""

    req: MaxRateRequest
    progress: Progress
    run_id: str
    cap: float
    """The highest rate the client budget accepts."""
    wire_bytes: int
    steps: list[dict[str, Any]] = field(default_factory=list)
    trial: int = 0

    @classmethod
    def start(cls, req: MaxRateRequest, progress: Progress) -> _Search:
        """Check the request and the client budget, and start the load run.

        Raises:
            ConfigError: a bad request, or a first step above the client budget.
        """
        from kafkalab.load.run import LoadRequest, start_load_run
        from kafkalab.paths import images_dir
        from kafkalab.payloads import load_body, wire_size_bytes

        if req.start_rate <= 0:
            raise ConfigError(f"--start-rate must be positive, got {req.start_rate:g}")
        if req.repeats < 0:
            raise ConfigError(f"--repeats must be ≥ 0, got {req.repeats}")
        first = _step_spec(req, req.start_rate)
        wire = wire_size_bytes(load_body(req.payload, req.encoding, images_dir()))
        check_budget(first, wire)
        cap = _rate_cap(first, wire)
        started = start_load_run(LoadRequest(cells=[first], data_dir=req.data_dir,
                                             descriptor_path=req.descriptor_path,
                                             run_id=req.run_id, command="kafkalab maxrate",
                                             workload_name="maxrate"), progress)
        return cls(req=req, progress=progress, run_id=started["run_id"], cap=cap,
                   wire_bytes=wire)

    def step(self, rate: float, trial: int = 0) -> bool:
        """Measure one cell at ``rate`` and judge it; returns whether it passed."""
        from kafkalab.load.cell import run_load_cell
        from kafkalab.load.run import LoadRequest, start_load_run

        req = self.req
        s = _step_spec(req, rate, trial)
        if self.steps or trial:  # add the cell to the run's plan
            start_load_run(LoadRequest(cells=[s], data_dir=req.data_dir,
                                       descriptor_path=req.descriptor_path, run_id=self.run_id,
                                       command="kafkalab maxrate", workload_name="maxrate"))
        try:
            summary = run_load_cell(req.data_dir, self.run_id, s, req.descriptor_path, noop)
        except RunError as exc:
            summary = {"target_rate_msgs_per_s": rate, "status": "failed", "error": str(exc)}
        reasons = judge(summary, req.objective_p99_ms, req.publish_delay_bound_ms) \
            if "achieved_rate_msgs_per_s" in summary else [f"cell failed: {summary.get('error')}"]
        self.steps.append({"rate_msgs_per_s": rate, "trial": trial, "passed": not reasons,
                           "reasons": reasons, "summary": {k: v for k, v in summary.items()
                                                           if k != "consumers_detail"}})
        self.progress(f"step {len(self.steps)}: {rate:,.0f} msg/s"
                      f"{' (repeat ' + str(trial) + ')' if trial else ''}: "
                      + ("pass" if not reasons else "FAIL — " + "; ".join(reasons)))
        return not reasons

    def bracket(self) -> tuple[float | None, float | None]:
        """Double from ``start_rate`` until a step fails (or the cap passes), halve down to
        ``start_rate``/64 while none passed, then bisect geometrically; returns ``(last
        passing rate, first failing rate)`` (None: none)."""
        req = self.req
        last_pass: float | None = None
        first_fail: float | None = None
        rate = _round_rate(req.start_rate)
        while len(self.steps) < req.max_steps:
            if self.step(rate):
                last_pass = rate
                if rate >= self.cap:
                    break
                rate = min(_round_rate(rate * 2), self.cap)
            else:
                first_fail = rate
                break
        floor = req.start_rate * LOWEST_FRACTION
        while last_pass is None and len(self.steps) < req.max_steps and rate / 2 >= floor:
            rate = _round_rate(rate / 2)
            if self.step(rate):
                last_pass = rate
            else:
                first_fail = rate
        while (last_pass is not None and first_fail is not None
               and first_fail / last_pass > RESOLUTION and len(self.steps) < req.max_steps):
            mid = _round_rate(math.sqrt(last_pass * first_fail))
            if mid in (last_pass, first_fail):
                break
            if self.step(mid):
                last_pass = mid
            else:
                first_fail = mid
        return last_pass, first_fail

    def confirm(self, last_pass: float | None) -> tuple[float | None, list[dict[str, Any]]]:
        """A single pass near the knee can be luck: the found rate must pass ``repeats``
        more times within ±5 %; if one fails, 15 % lower is tried (at most
        :data:`CONFIRM_ATTEMPTS`). Returns the confirmed rate (None: none; the found rate
        itself when ``repeats`` is 0) and every repeat."""
        req = self.req
        repeats: list[dict[str, Any]] = []
        confirmed: float | None = last_pass if req.repeats == 0 else None
        candidate = last_pass
        floor = req.start_rate * LOWEST_FRACTION
        for _attempt in range(CONFIRM_ATTEMPTS if req.repeats else 0):
            if candidate is None or candidate < floor:
                break
            batch = self._repeat(candidate)
            repeats += batch
            if len(batch) == req.repeats and all(
                    b["passed"] and b["achieved_rate_msgs_per_s"]
                    and abs(b["achieved_rate_msgs_per_s"] / candidate - 1) <= REPEAT_TOLERANCE
                    for b in batch):
                confirmed = candidate
                break
            candidate = _round_rate(candidate * CONFIRM_BACKOFF)
        return confirmed, repeats

    def _repeat(self, rate: float) -> list[dict[str, Any]]:
        """Up to ``repeats`` steps at ``rate``, stopping at the first that fails."""
        batch = []
        for _ in range(self.req.repeats):
            self.trial += 1
            ok = self.step(rate, trial=self.trial)
            batch.append({"rate_msgs_per_s": rate, "trial": self.trial, "passed": ok,
                          "achieved_rate_msgs_per_s":
                              self.steps[-1]["summary"].get("achieved_rate_msgs_per_s")})
            if not ok:
                break
        return batch

    def climb(self, confirmed: float | None) -> tuple[float | None, float | None, bool | None]:
        """1.1× the confirmed rate must not be sustainable: it fails if any of its repeats
        fails. If all pass, it is the better answer: confirm it and try 1.1× again (at most
        :data:`MAX_CLIMBS`). Returns ``(confirmed, the last 1.1× rate tried, whether it
        failed)`` (None, None: not tried, e.g. above the cap)."""
        over_rate: float | None = None
        over_fails: bool | None = None
        for _climb in range(MAX_CLIMBS if confirmed is not None else 0):
            assert confirmed is not None
            over = _round_rate(confirmed * OVER_FACTOR)
            if over > self.cap:
                break
            over_rate = over
            held = True
            for _ in range(max(1, self.req.repeats)):
                self.trial += 1  # its own trial number: never overwrites a step at the same rate
                if not self.step(over, trial=self.trial):
                    held = False
                    break
            if not held:
                over_fails = True
                break
            over_fails = False
            confirmed = over
        return confirmed, over_rate, over_fails


def _rate_cap(spec: LoadCellSpec, wire: int) -> float:
    """The highest rate the client budget accepts for this cell shape."""
    lo, hi = spec.rate_msgs_per_s, spec.rate_msgs_per_s
    while True:
        try:
            check_budget(spec.model_copy(update={"rate_msgs_per_s": hi * 2}), wire)
        except ConfigError:
            break
        hi *= 2
        if hi > 1e7:
            return hi
    lo = hi
    hi = hi * 2
    for _ in range(30):
        mid = (lo + hi) / 2
        try:
            check_budget(spec.model_copy(update={"rate_msgs_per_s": mid}), wire)
            lo = mid
        except ConfigError:
            hi = mid
    return math.floor(lo)


def _result(req: MaxRateRequest, run_id: str, steps: list[dict[str, Any]],
            last_pass: float | None, first_fail: float | None, cap: float, wire: int) -> dict[str, Any]:
    search = sorted((s for s in steps if s["trial"] == 0), key=lambda s: s["rate_msgs_per_s"])
    lowest_p99 = next((s["summary"].get("e2e_p99_ms") for s in search
                       if s["summary"].get("e2e_p99_ms") is not None), None)
    knee = None
    if lowest_p99:
        for s in search:
            p99 = s["summary"].get("e2e_p99_ms")
            if p99 is None or p99 > 2 * lowest_p99:
                knee = s["rate_msgs_per_s"]
                break
    failing = [s for s in search if not s["passed"]]
    # the bracketing passed at the client budget's cap: the load generator, not the broker,
    # bounded the search, whatever a repeat or the 1.1x check did after
    reached_cap = any(s["passed"] and s["rate_msgs_per_s"] >= cap for s in search)
    limited_by = (ran_out(failing[0]["summary"]) if failing and "achieved_rate_msgs_per_s" in failing[0]["summary"]
                  else ("the client budget (the search stopped at the budget's cap)"
                        if reached_cap or (last_pass is not None and last_pass >= cap)
                        else None))
    summary0 = steps[0]["summary"] if steps else {}
    return {
        "run_id": run_id, "payload": req.payload, "payload_bytes": wire, "acks": summary0.get("acks"),
        "profile": req.profile, "partitions": req.partitions, "consumers": req.consumers,
        "replication_factor": _replication_factor(req.profile), "objective_p99_ms": req.objective_p99_ms,
        "publish_delay_bound_ms": req.publish_delay_bound_ms,
        "max_rate_msgs_per_s": last_pass,
        "max_rate_mb_per_s": round(last_pass * wire / 1e6, 4) if last_pass else None,
        "first_failing_rate_msgs_per_s": first_fail, "budget_cap_msgs_per_s": cap,
        "knee_rate_msgs_per_s": knee, "limited_by": limited_by,
        "capped_by_budget": bool(reached_cap and not failing),
        "broker_is_emulator": bool(summary0.get("broker_is_emulator")),
        "steps": steps,
    }


def _replication_factor(profile: str) -> int | None:
    from kafkalab.config import load_profile

    try:
        return load_profile(profile).topic.replication_factor
    except ConfigError:
        return None


def format_max_rate_matrix(results: list[dict[str, Any]]) -> str:
    """One line per searched combination: payload × acks × partitions × rf."""
    head = (f"{'payload':>8} {'acks':>4} {'parts':>5} {'rf':>3} {'profile':>12} {'max msg/s':>10} "
            f"{'MB/s':>8} {'knee':>8}  limited by")
    lines = [head, "-" * len(head)]
    for r in results:
        mr = r.get("max_rate_msgs_per_s")
        lines.append(f"{r['payload']:>8} {r.get('acks')!s:>4} {r['partitions']:>5} "
                     f"{r.get('replication_factor')!s:>3} {r['profile']:>12} "
                     f"{'none' if mr is None else format(mr, ',.0f'):>10} "
                     f"{'' if mr is None else format(r['max_rate_mb_per_s'], '.3f'):>8} "
                     f"{r.get('knee_rate_msgs_per_s') or '—'!s:>8}  {r.get('limited_by') or '—'}")
    return "\n".join(lines)


def format_max_rate(result: dict[str, Any]) -> str:
    """The CLI's text: the steps, then the verdict."""
    lines = [f"{'step':>4} {'rate':>9} {'achieved':>9} {'e2e p99':>9} {'pub p99':>8} {'lag end':>8}  verdict"]
    for i, s in enumerate(result["steps"], 1):
        m = s["summary"]
        label = f"{s['rate_msgs_per_s']:>9,.0f}"
        lines.append(f"{i:>4} {label} {m.get('achieved_rate_msgs_per_s') or 0:>9,.0f} "
                     f"{_ms(m.get('e2e_p99_ms')):>9} {_ms(m.get('publish_delay_p99_ms')):>8} "
                     f"{m.get('lag_end_msgs') if m.get('lag_end_msgs') is not None else '—':>8}  "
                     + ("pass" if s["passed"] else "fail: " + "; ".join(s["reasons"]))
                     + (f" (repeat {s['trial']})" if s["trial"] else ""))
    mr = result["max_rate_msgs_per_s"]
    if mr is None and result.get("search_max_rate_msgs_per_s"):
        lines.append(f"no confirmed rate: {result['search_max_rate_msgs_per_s']:,.0f} msg/s passed "
                     "once, but its repeats (and up to six rates 15 % apart below it) did not all pass")
    elif mr is None:
        lines.append("no passing rate found (down to start/64)")
    else:
        lines.append(f"maximum sustainable rate: {mr:,.0f} msg/s = {result['max_rate_mb_per_s']:.3f} MB/s "
                     f"({result['payload']}, acks {result['acks']}, {result['partitions']} partition(s), "
                     f"profile {result['profile']}, {result['consumers']} consumer(s))")
        lines.append(f"limited by: {result['limited_by']}; knee (e2e p99 > 2× the lowest rate's): "
                     f"{result['knee_rate_msgs_per_s'] or 'not reached'}")
        lines.append(f"search found {result.get('search_max_rate_msgs_per_s') or 0:,.0f} msg/s; "
                     f"repeats agree within ±5 %: {result['repeats_agree']}; "
                     + (f"{result['over_rate_msgs_per_s']:,.0f} msg/s (1.1×) fails: "
                        f"{result['over_rate_fails']}" if result.get("over_rate_msgs_per_s")
                        else "1.1× is above the client budget: not run"))
    if result.get("broker_is_emulator"):
        lines.append("EMULATOR — not Kafka: these rates say nothing about Kafka")
    lines.append(f"run {result['run_id']}")
    return "\n".join(lines)
