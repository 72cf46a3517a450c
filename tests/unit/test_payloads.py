"""Payloads: the stamp header and seed 000's images."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from kafkalab.payloads import (
    HEADER_BYTES,
    IMAGE_SPECS,
    ensure_images,
    load_body,
    read_stamp,
    stamp,
    wire_size_bytes,
)


def test_stamp_round_trip() -> None:
    nonce = b"12345678"
    value = stamp(b"body", 42, 1_795_000_000_123_456_789, nonce, base64_body=True)
    assert len(value) == HEADER_BYTES + 4 == wire_size_bytes(b"body")
    assert read_stamp(value) == (42, 1_795_000_000_123_456_789, nonce)
    assert read_stamp(b"not ours at all, no magic here....") is None
    assert read_stamp(None) is None


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


def test_random_body_payload_is_deterministic(tmp_path: Path) -> None:
    assert load_body("1kb", "raw", tmp_path) == load_body("1kb", "raw", tmp_path)
    assert len(load_body("1kb", "raw", tmp_path)) == 1024
