"""HTTP POST of the same payload to a real local server (seed 000's scenario 1).

What it measures, beside Kafka: *one hop* (client → server process on the same host), where
Kafka's e2e is two hops (producer → broker → consumer) plus the log append (and replication
when rf > 1). ``e2e_latency_ms`` is send → the server holds the whole body (the server
stamps ``receive_ts_ns`` on CLOCK_MONOTONIC, shared with this process on Linux);
``round_trip_ms`` is the whole request (send → response read). There is no broker ack:
``ack_ts_ns`` and so ``publish_latency_ms`` are null (``loop_mode = request``). A request
that fails (a timeout, a refused connection, a non-2xx answer) is an ``error`` row: sent and
failed, never dropped. The body is built before ``send_ts_ns`` is read, immediately before
``post()``.
"""

from __future__ import annotations

import subprocess
import sys
from typing import IO, cast

from kafkalab.errors import ClusterError, RunError
from kafkalab.progress import Progress
from kafkalab.scenarios.base import (
    CatalogScenario,
    Cell,
    Tracker,
    heap_setting,
    now_ns,
    steady_heap,
    wall_now_ns,
)


class HttpServerProcess:
    """The receiver, in its own process, bound to 127.0.0.1; a context manager."""

    def __init__(self, port: int = 0, start_timeout_s: float = 15.0) -> None:
        self.requested_port = port
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> HttpServerProcess:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "kafkalab.scenarios.http_server", "--port", str(self.requested_port)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        line = _readline_with_timeout(cast(IO[str], self._proc.stdout), self.start_timeout_s)
        if not line.startswith("LISTENING "):
            self.__exit__()
            detail = line.strip().removeprefix("ERROR ") or "no answer"
            if "in use" in detail:
                detail = f"port {self.requested_port} on 127.0.0.1 is already in use"
            raise ClusterError(f"HTTP server did not start: {detail}")
        self.port = int(line.split()[1])
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)
        self._proc = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/ingest"


def _readline_with_timeout(stream: IO[str], timeout_s: float) -> str:
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    ready = sel.select(timeout_s)
    sel.close()
    return stream.readline() if ready else ""


class RestScenario(CatalogScenario, scenario="rest"):
    """``requests`` client → local HTTP server; e2e is send start → server holds the body."""

    def client_version(self) -> str:
        import requests

        return str(requests.__version__)

    def client_settings(self, cell: Cell) -> dict[str, str]:
        """How the requests are made: one keep-alive session, POST, the timeout."""
        return {"http.method": "POST", "http.session": "keep-alive (one requests.Session)",
                "http.timeout_s": str(cell.workload.message_timeout_s),
                "http.server": "kafkalab.scenarios.http_server on 127.0.0.1 (TCP_NODELAY)",
                "harness.loop_mode": str(self.loop_mode), "harness.heap": heap_setting()}

    def run(self, cell: Cell, progress: Progress) -> None:
        """POST every message, one at a time; every row goes to ``cell.sink``.

        Raises:
            RunError: every request failed (the rows are written first).
        """
        import requests

        steady_heap()
        tracker = Tracker(cell, expects_ack=False, loop_mode=self.loop_mode)
        total = cell.total_messages
        timeout_s = cell.workload.message_timeout_s
        try:
            with HttpServerProcess(cell.http_port) as server, requests.Session() as session:
                url, post = server.url, session.post
                for seq in range(total):
                    value = cell.message(seq)  # built before the clock is read
                    wall_ns = wall_now_ns()
                    send_ns = now_ns()
                    try:
                        resp = post(url, data=value, timeout=timeout_s)
                        done_ns = now_ns()
                    except requests.RequestException as exc:  # a timeout, a refusal
                        tracker.on_send(seq, send_ns, wall_ns)
                        tracker.on_send_error(seq, f"{type(exc).__name__}: {exc}")
                        continue
                    tracker.on_send(seq, send_ns, wall_ns)
                    try:
                        resp.raise_for_status()
                        receive_ns = int(resp.json()["receive_ts_ns"])
                    except (requests.RequestException, ValueError, KeyError) as exc:
                        tracker.on_send_error(seq, f"{type(exc).__name__}: {exc}")
                        continue
                    tracker.on_receipt(seq, receive_ns, round_trip_ms=(done_ns - send_ns) / 1e6)
                    if (seq + 1) % max(1, total // 4) == 0 or seq + 1 == total:
                        progress(f"{seq + 1}/{total} requests")
        finally:
            tracker.finish()
        if tracker.status_counts and set(tracker.status_counts) == {"error"}:
            raise RunError(f"every HTTP request failed ({tracker.status_counts['error']} of "
                           f"{total}); see the rows' error column")
