"""A real webhook receiver for the alert tests: an HTTP server on 127.0.0.1 (a free port)
that records every POST and answers with a chosen status (not a test module)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    """A real HTTP server on 127.0.0.1 (a free port) recording every POST in :attr:`posts`
    (``{"path", "headers", "body"}``, the body parsed as JSON) and answering ``status`` with
    ``reply``. :meth:`close` stops it."""

    def __init__(self, status: int = 200, reply: bytes = b"ok") -> None:
        self.posts: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                outer.posts.append({"path": self.path, "headers": dict(self.headers),
                                    "body": json.loads(self.rfile.read(n) or b"null")})
                self.send_response(status)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
