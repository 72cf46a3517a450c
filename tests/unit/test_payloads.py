"""Payloads: the stamp header and seed 000's images."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import pytest

import kafkalab.payloads as payloads
from kafkalab.payloads import (
    HEADER,
    HEADER_BYTES,
    IMAGE_SPECS,
    MAGIC,
    ensure_images,
    load_body,
    read_stamp,
    stamp,
    wire_size_bytes,
)


def test_stamp_round_trip() -> None:
    nonce = b"12345678"
    value = stamp(b"body", 42, nonce, base64_body=True, intended_ts_ns=1_795_000_000_123)
    assert len(value) == HEADER_BYTES + 4 == wire_size_bytes(b"body") == 36
    assert value[4:6] == b"\x00\x02"                          # header version 2
    assert value[6:8] == b"\x00\x01"                          # base64 flag
    assert value[8:16] == (42).to_bytes(8, "big")             # seq
    assert value[16:24] == (1_795_000_000_123).to_bytes(8, "big")  # intended_ts_ns
    assert value[24:32] == nonce and value[32:] == b"body"
    assert read_stamp(value) == (42, 1_795_000_000_123, nonce)
    assert read_stamp(stamp(b"", 7, nonce, base64_body=False)) == (7, 0, nonce)  # closed loop: 0
    assert read_stamp(b"not ours at all, no magic here....") is None
    assert read_stamp(None) is None
    assert read_stamp(value[:31]) is None


def test_a_version_1_header_is_not_read_as_ours() -> None:
    v1 = HEADER.pack(MAGIC, 1, 0, 42, 1_795_000_000_000_000_000, b"12345678") + b"body"
    assert read_stamp(v1) is None


def test_1mb_image_is_generated_deterministically_and_verified(tmp_path: Path) -> None:
    (path,) = ensure_images(tmp_path, ["1mb"])
    data = path.read_bytes()
    assert data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9"  # a JPEG
    assert hashlib.sha256(data).hexdigest() == IMAGE_SPECS["1mb"].sha256
    # seed 000: its 1 MB jpg became 1,458,612 bytes of base64; ours is within 1 %
    b64 = load_body("1mb", "base64", tmp_path)
    assert abs(len(b64) - 1_458_612) / 1_458_612 < 0.01
    assert base64.b64decode(b64) == data
    # a corrupted file is regenerated
    path.write_bytes(b"garbage")
    ensure_images(tmp_path, ["1mb"])
    assert hashlib.sha256(path.read_bytes()).hexdigest() == IMAGE_SPECS["1mb"].sha256


def test_load_body_verifies_the_image_on_every_use(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (path,) = ensure_images(tmp_path, ["1mb"])
    good = path.read_bytes()
    hashed: list[int] = []
    real_sha256 = payloads._sha256

    def counting_sha256(data: bytes) -> str:
        hashed.append(len(data))
        return real_sha256(data)

    monkeypatch.setattr(payloads, "_sha256", counting_sha256)

    assert load_body("1mb", "raw", tmp_path) == good
    assert hashed == []  # unchanged since this process verified it: not hashed again

    # same size, other bytes, a new mtime: hashed on use, found wrong, rendered again
    corrupt = bytearray(good)
    corrupt[1000] ^= 0xFF
    path.write_bytes(bytes(corrupt))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert load_body("1mb", "raw", tmp_path) == good
    assert path.read_bytes() == good and len(hashed) == 2  # the bad file, then the fresh render
    assert [p.name for p in tmp_path.iterdir()] == ["1mb.jpg"]  # written atomically: no temp left

    # a missing image is regenerated too
    path.unlink()
    assert load_body("1mb", "raw", tmp_path) == good


def test_random_body_payload_is_deterministic(tmp_path: Path) -> None:
    assert load_body("1kb", "raw", tmp_path) == load_body("1kb", "raw", tmp_path)
    assert len(load_body("1kb", "raw", tmp_path)) == 1024
