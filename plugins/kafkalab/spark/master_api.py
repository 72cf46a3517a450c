"""The standalone master's JSON view (``http://127.0.0.1:<webui>/json/``), read as typed data.

The master's web UI serves its whole state as JSON: its status, every worker it knows (a
restarted worker reappears with a new id; the old entry stays ``DEAD``) and the active and
completed applications. :func:`parse_master_json` is pure; :func:`fetch_master` does the
one HTTP GET (loopback only, short timeout).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MasterView", "SparkApp", "WorkerView", "fetch_master", "parse_master_json"]


@dataclass(frozen=True)
class WorkerView:
    """One worker as the master sees it."""

    worker_id: str
    host: str
    port: int
    state: str
    """``ALIVE``, ``DEAD``, ``DECOMMISSIONED``, ``UNKNOWN``."""
    cores: int
    cores_used: int
    memory_mb: int
    memory_used_mb: int


@dataclass(frozen=True)
class SparkApp:
    """One application (a spark-submit) the master ran or runs."""

    app_id: str
    name: str
    state: str
    """``RUNNING``, ``WAITING``, ``FINISHED``, ``FAILED``, ``KILLED``."""
    cores: int
    duration_ms: int


@dataclass(frozen=True)
class MasterView:
    """The master's state."""

    url: str
    status: str
    """``ALIVE`` for a working master."""
    workers: tuple[WorkerView, ...]
    active_apps: tuple[SparkApp, ...]
    completed_apps: tuple[SparkApp, ...]

    def alive_on(self, host: str, port: int) -> WorkerView | None:
        """The ALIVE worker registered from ``host:port``, if any."""
        for w in self.workers:
            if w.state == "ALIVE" and w.host == host and w.port == port:
                return w
        return None


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _app(doc: Mapping[str, Any]) -> SparkApp:
    return SparkApp(app_id=str(doc.get("id", "")), name=str(doc.get("name", "")),
                    state=str(doc.get("state", "")), cores=_int(doc.get("cores")),
                    duration_ms=_int(doc.get("duration")))


def parse_master_json(doc: Mapping[str, Any]) -> MasterView:
    """A :class:`MasterView` from the master's ``/json/`` document (missing keys → empty)."""
    workers = tuple(
        WorkerView(worker_id=str(w.get("id", "")), host=str(w.get("host", "")),
                   port=_int(w.get("port")), state=str(w.get("state", "")),
                   cores=_int(w.get("cores")), cores_used=_int(w.get("coresused")),
                   memory_mb=_int(w.get("memory")), memory_used_mb=_int(w.get("memoryused")))
        for w in doc.get("workers") or [] if isinstance(w, Mapping))
    return MasterView(
        url=str(doc.get("url", "")), status=str(doc.get("status", "")), workers=workers,
        active_apps=tuple(_app(a) for a in doc.get("activeapps") or [] if isinstance(a, Mapping)),
        completed_apps=tuple(_app(a) for a in doc.get("completedapps") or []
                             if isinstance(a, Mapping)),
    )


def fetch_master(webui_url: str, timeout_s: float = 2.0) -> MasterView | None:
    """The master's state from ``<webui_url>/json/``; None when it does not answer (yet)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    try:
        with opener.open(f"{webui_url.rstrip('/')}/json/", timeout=timeout_s) as r:
            doc = json.loads(r.read().decode("utf-8"))
    except (OSError, urllib.error.URLError, ValueError):
        return None
    return parse_master_json(doc) if isinstance(doc, Mapping) else None
