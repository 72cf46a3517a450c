"""A minimal, read-only ZooKeeper client: enough of the wire protocol (jute) to read nodes
without a client library (what a ZooKeeper-mode Kafka keeps there is read by
:class:`kafkalab.cluster.partitions.ZooKeeperPartitions`).

Protocol (ZooKeeper 3.4): every frame is a 4-byte big-endian length followed by the body.
Connect: ``protocolVersion:int lastZxidSeen:long timeOut:int sessionId:long passwd:buffer``.
Requests: ``xid:int type:int`` then the body (getData = 4: ``path:ustring watch:bool``;
getChildren = 8: same body); replies: ``xid:int zxid:long err:int`` then the body when
``err`` is 0 (getData: ``data:buffer stat``; getChildren: ``vector<ustring>``).
"""

from __future__ import annotations

import socket
import struct

from kafkalab.procs import HOST

__all__ = ["ZkReader"]

_OP_GET_DATA, _OP_GET_CHILDREN, _OP_CLOSE = 4, 8, -11
_NO_NODE = -101


class ZkReader:
    """One ZooKeeper session on ``127.0.0.1:port`` that reads nodes; reconnects after an error.

    Not thread-safe: one reader per thread.
    """

    def __init__(self, port: int, timeout_s: float = 2.0, host: str = HOST) -> None:
        self._addr = (host, port)
        self._timeout_s = timeout_s
        self._sock: socket.socket | None = None
        self._xid = 0

    # ------------------------------------------------------------------ wire
    def _recv_exact(self, n: int) -> bytes:
        assert self._sock is not None
        buf = bytearray()
        while len(buf) < n:
            chunk = self._sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("ZooKeeper closed the connection")
            buf += chunk
        return bytes(buf)

    def _frame(self) -> bytes:
        (n,) = struct.unpack(">i", self._recv_exact(4))
        return self._recv_exact(n)

    def _send(self, body: bytes) -> None:
        assert self._sock is not None
        self._sock.sendall(struct.pack(">i", len(body)) + body)

    def _connect(self) -> None:
        s = socket.create_connection(self._addr, timeout=self._timeout_s)
        self._sock = s
        timeout_ms = int(max(self._timeout_s * 3, 6.0) * 1000)
        self._send(struct.pack(">iqiqi", 0, 0, timeout_ms, 0, 16) + b"\0" * 16)
        reply = self._frame()
        _proto, negotiated, _session = struct.unpack_from(">iiq", reply)
        if negotiated <= 0:
            self.close()
            raise ConnectionError("ZooKeeper refused the session")

    def close(self) -> None:
        """End the session (best effort) and close the socket."""
        if self._sock is None:
            return
        try:
            self._xid += 1
            self._send(struct.pack(">ii", self._xid, _OP_CLOSE))
        except OSError:
            pass
        try:
            self._sock.close()
        finally:
            self._sock = None

    def _request(self, op: int, path: str) -> tuple[int, bytes]:
        if self._sock is None:
            self._connect()
        self._xid += 1
        p = path.encode()
        try:
            self._send(struct.pack(">ii", self._xid, op) + struct.pack(">i", len(p)) + p + b"\0")
            while True:
                reply = self._frame()
                xid, _zxid, err = struct.unpack_from(">iqi", reply)
                if xid == self._xid:
                    return err, reply[16:]
                # a ping or notification (we set no watches): skip it
        except (OSError, ConnectionError, struct.error):
            self.close()
            raise

    # ------------------------------------------------------------------ reads
    def get_data(self, path: str) -> bytes | None:
        """The node's data; None when the node does not exist.

        Raises:
            OSError: ZooKeeper cannot be reached (the next call reconnects).
        """
        err, body = self._request(_OP_GET_DATA, path)
        if err == _NO_NODE:
            return None
        if err != 0:
            raise OSError(f"ZooKeeper getData {path}: error {err}")
        (n,) = struct.unpack_from(">i", body)
        return b"" if n < 0 else body[4:4 + n]

    def get_children(self, path: str) -> list[str] | None:
        """The node's children; None when the node does not exist."""
        err, body = self._request(_OP_GET_CHILDREN, path)
        if err == _NO_NODE:
            return None
        if err != 0:
            raise OSError(f"ZooKeeper getChildren {path}: error {err}")
        (count,) = struct.unpack_from(">i", body)
        out, pos = [], 4
        for _ in range(max(count, 0)):
            (n,) = struct.unpack_from(">i", body, pos)
            out.append(body[pos + 4:pos + 4 + n].decode())
            pos += 4 + n
        return out

    def __enter__(self) -> ZkReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
