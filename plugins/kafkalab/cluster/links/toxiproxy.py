"""Toxiproxy (Shopify's TCP fault proxy), the program that carries a cluster's degradable links:
installing it, and its HTTP API.

**Why Toxiproxy.** The lab's machines have network namespaces but no ``netem`` qdisc and no
loadable kernel modules, so the kernel can cut a namespace's link but cannot delay, jitter
or throttle one. Toxiproxy, a maintained user-space proxy, does all of these per TCP link
(its *toxics*: ``latency``, ``bandwidth``, ``timeout``, …) with no kernel support, on
loopback; one mechanism serves every fault the lab injects on a link. What it does not
model: a cut link still accepts a TCP connection (the proxy answers the handshake, then
black-holes the bytes), where a real partition leaves a SYN unanswered; a peer's client
sees a request time out in both cases.

**Install.** ``go install`` of the pinned :data:`TOXIPROXY_VERSION` from the Go module
proxy (the module's checksums are checked by Go against its checksum database) into
``<lab home>/bin/toxiproxy-server-<version>``; idempotent, offline once built.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import requests

from kafkalab.errors import ClusterError
from kafkalab.progress import Progress

__all__ = ["TOXIPROXY_MODULE", "TOXIPROXY_VERSION", "Toxiproxy", "ensure_toxiproxy",
           "toxiproxy_binary"]

TOXIPROXY_VERSION = "v2.12.0"
"""The pinned release (Go 1.23 or newer builds it)."""

TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"

_BUILD_TIMEOUT_S = 600
_API_TIMEOUT_S = 5.0


def toxiproxy_binary(lab_home: Path) -> Path:
    """Where the pinned server is installed under the lab home."""
    return lab_home / "bin" / f"toxiproxy-server-{TOXIPROXY_VERSION}"


def ensure_toxiproxy(lab_home: Path, progress: Progress) -> Path:
    """The pinned Toxiproxy server, built with ``go install`` when missing.

    Raises:
        ClusterError: no Go toolchain, or the build failed (its last line): nothing is left
            at the binary's path.
    """
    binary = toxiproxy_binary(lab_home)
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").is_file()
                                else None)
    if go is None:
        raise ClusterError("degradable links need Toxiproxy, built with Go 1.23+: no `go` "
                           "on PATH (install Go, then run `make setup`)")
    progress(f"building Toxiproxy {TOXIPROXY_VERSION} with go install (Go module proxy)")
    binary.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=binary.parent, prefix=".toxiproxy-") as tmp:
        env = {**os.environ, "GOBIN": tmp, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
        try:
            done = subprocess.run([go, "install", f"{TOXIPROXY_MODULE}@{TOXIPROXY_VERSION}"],
                                  env=env, capture_output=True, text=True,
                                  timeout=_BUILD_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise ClusterError(f"go install of Toxiproxy took over {_BUILD_TIMEOUT_S} s") from None
        built = Path(tmp) / "server"
        if done.returncode != 0 or not built.is_file():
            lines = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
            raise ClusterError("go install of Toxiproxy failed: "
                               f"{lines[-1] if lines else 'no output'}")
        os.replace(built, binary)
    return binary


class Toxiproxy:
    """The HTTP API of a running Toxiproxy server on ``127.0.0.1:port``."""

    def __init__(self, host: str, port: int) -> None:
        self.base = f"http://{host}:{port}"

    def _call(self, method: str, path: str, body: dict[str, Any] | list[Any] | None = None,
              ok: tuple[int, ...] = (200, 201, 204)) -> Any:
        try:
            r = requests.request(method, self.base + path, json=body, timeout=_API_TIMEOUT_S)
        except requests.RequestException as exc:
            raise ClusterError(f"the link proxies' API at {self.base} did not answer "
                               f"({type(exc).__name__})") from None
        if r.status_code not in ok:
            raise ClusterError(f"the link proxies' API refused {method} {path}: "
                               f"HTTP {r.status_code} {r.text.strip()[:200]}")
        return r.json() if r.content and r.status_code != 204 else None

    def alive(self) -> bool:
        try:
            return requests.get(self.base + "/version", timeout=1.0).ok
        except requests.RequestException:
            return False

    def proxies(self) -> dict[str, dict[str, Any]]:
        """Every proxy by name, with its ``toxics`` and ``enabled``."""
        return dict(self._call("GET", "/proxies") or {})

    def add_toxic(self, proxy: str, name: str, kind: str, stream: str,
                  attributes: dict[str, Any]) -> None:
        """Add (or replace) toxic ``name`` on ``proxy``'s ``stream`` (``upstream``: bytes
        from the link's source to its destination; ``downstream``: back)."""
        self.remove_toxic(proxy, name)
        self._call("POST", f"/proxies/{proxy}/toxics",
                   {"name": name, "type": kind, "stream": stream, "toxicity": 1.0,
                    "attributes": attributes})

    def remove_toxic(self, proxy: str, name: str) -> None:
        """Remove toxic ``name`` from ``proxy`` (nothing when it has none of that name)."""
        self._call("DELETE", f"/proxies/{proxy}/toxics/{name}", ok=(204, 404))

    def reset(self) -> None:
        """Remove every toxic and enable every proxy (``POST /reset``)."""
        self._call("POST", "/reset")
