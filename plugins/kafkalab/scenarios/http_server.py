"""The real HTTP receiver of the ``rest`` scenario (seed 000's web server).

Run as its own process: ``python -m kafkalab.scenarios.http_server --port 0``. It prints
``LISTENING <port>`` once bound (127.0.0.1 only). ``POST /ingest`` reads the whole body,
stamps ``receive_ts_ns`` the moment the last byte is in hand, and answers
``{"receive_ts_ns": ..., "body_bytes": ...}``. ``GET /health`` answers ok.

``receive_ts_ns`` is ``time.monotonic_ns()`` — CLOCK_MONOTONIC, the lab's interval clock
(:data:`kafkalab.scenarios.base.now_ns`). On Linux it is one clock for every process of the
host, so the client subtracts its own send time from it; a wall-clock step cannot distort
the interval. It means nothing on another host.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without TCP_NODELAY, Nagle plus the
        # client's delayed ACK add ~40 ms to every round trip.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        remaining, chunks = length, []
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 4 * 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        receive_ts_ns = time.monotonic_ns()  # the lab's interval clock, shared by the host
        got = length - remaining
        body = json.dumps({"receive_ts_ns": receive_ts_ns, "body_bytes": got}).encode()
        self.send_response(200 if remaining == 0 else 400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        body = b'{"status": "ok"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        server = ThreadingHTTPServer((args.host, args.port), _Handler)
    except OSError as exc:
        print(f"ERROR cannot listen on {args.host}:{args.port}: {exc.strerror}", flush=True)
        return 2
    server.daemon_threads = True
    print(f"LISTENING {server.server_address[1]}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever(poll_interval=0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
