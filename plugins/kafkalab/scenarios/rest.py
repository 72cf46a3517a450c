"""HTTP POST of the same payload to a real local server (seed 000's scenario 1)."""

from __future__ import annotations

import subprocess
import sys
from typing import IO, cast

from kafkalab.errors import ClusterError, RunError
from kafkalab.progress import Progress
from kafkalab.samples import Sample
from kafkalab.scenarios.base import CatalogScenario, Cell, Tracker, now_ns


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

    def run(self, cell: Cell, progress: Progress) -> list[Sample]:
        import requests

        tracker = Tracker(cell)
        total = cell.total_messages
        with HttpServerProcess(cell.http_port) as server, requests.Session() as session:
            for seq in range(total):
                send_ns = now_ns()
                tracker.on_send(seq, send_ns)
                try:
                    resp = session.post(server.url, data=cell.message(seq, send_ns),
                                        timeout=cell.workload.message_timeout_s)
                    done_ns = now_ns()
                    resp.raise_for_status()
                    answer = resp.json()
                except requests.RequestException as exc:
                    tracker.on_send_error(seq, f"{type(exc).__name__}: {exc}")
                    continue
                sample = tracker.sent[seq]
                sample.ack_ts_ns = done_ns
                sample.receive_ts_ns = int(answer["receive_ts_ns"])
                sample.round_trip_ms = (done_ns - send_ns) / 1e6
                within = sample.receive_ts_ns <= tracker.deadline_ns[seq]
                sample.status = "ok" if within else "late"
                if (seq + 1) % max(1, total // 4) == 0 or seq + 1 == total:
                    progress(f"{seq + 1}/{total} requests")
        samples = tracker.samples()
        if samples and all(s.status == "error" for s in samples):
            raise RunError(f"every HTTP request failed: {samples[0].error}")
        return samples
