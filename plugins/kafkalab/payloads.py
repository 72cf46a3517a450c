"""Payloads: seed 000's JPEG images and small random bodies, plus the stamp header.

Images live in ``include/images/<name>.jpg``. They are not committed: ``ensure_images``
generates them deterministically (a seeded gradient-plus-noise picture encoded by the pinned
Pillow) and verifies each file's SHA-256 against ``IMAGE_SPECS``, so every machine measures
byte-identical payloads. :func:`load_body` verifies the hash on *every* use (a file changed
since it was last verified is hashed again; an unchanged one — same size and modification
time — is trusted for the rest of the process) and regenerates a wrong file through the one
atomic writer (:func:`kafkalab.store.atomic_write`). ``1kb`` and friends are seeded random
bytes made in memory.

Every message on the wire starts with a 32-byte stamp header (works on Kafka 0.9, which has
neither record headers nor record timestamps)::

    offset size  field
    0      4     magic b"KLAB"
    4      2     header version (2), big-endian
    6      2     flags (bit 0: body is base64)
    8      8     seq, unsigned big-endian
    16     8     intended_ts_ns: when the message was meant to be sent (CLOCK_MONOTONIC);
                 0 in the closed loop, filled by an open-loop load engine
    24     8     run nonce (8 random bytes of the cell), to ignore strangers' records

The header carries no send time: a message is built (header + body copy) *before* the
scenario reads the clock, so building it is never part of a measured interval; the send time
lives in the sender's book-keeping (:class:`kafkalab.scenarios.base.Tracker`). Version 1
headers (send_ts_ns in place of intended_ts_ns, schema 1) are not read as ours.
"""

from __future__ import annotations

import base64
import hashlib
import io
import random
import struct
from dataclasses import dataclass
from pathlib import Path

from kafkalab.errors import ConfigError
from kafkalab.store import atomic_write

HEADER = struct.Struct(">4sHHQQ8s")
HEADER_BYTES = HEADER.size
MAGIC = b"KLAB"
HEADER_VERSION = 2
"""The stamp header's layout version (2: intended_ts_ns at offset 16)."""
FLAG_BASE64 = 1


@dataclass(frozen=True)
class ImageSpec:
    """How one image is generated, and the hash it must have."""

    name: str
    width_px: int
    height_px: int
    seed: int
    sha256: str


IMAGE_SPECS: dict[str, ImageSpec] = {
    spec.name: spec
    # Sizes chosen so the base64 forms match seed 000's (1,458,612 ... 13,566,276 bytes).
    for spec in (
        ImageSpec("1mb", 1520, 1139, 1, "cf9bc3329859d16184d3972881a6b424c586a15c0086032b49ac8277ff8508af"),
        ImageSpec("3mb", 2653, 1990, 3, "43ec8f8f3c1aab7c1a39ba5bed2f5944179f9001c0d813fcfe52f896332baa09"),
        ImageSpec("5mb", 3145, 2359, 5, "491aa742d1abc666e6767c348e7e21669189103e745f04f3b2b6284fabf3f950"),
        ImageSpec("10mb", 4635, 3476, 10, "47f579adc2c9b98ba085c0063256000177830f9734a0f9005843a0037577e926"),
    )
}

RANDOM_BODY_SIZES_BYTES: dict[str, int] = {"100b": 100, "1kb": 1024, "10kb": 10 * 1024, "100kb": 100 * 1024}


def payload_names() -> list[str]:
    """Every payload name the lab accepts."""
    return [*RANDOM_BODY_SIZES_BYTES, *IMAGE_SPECS]


def _render_jpeg(spec: ImageSpec) -> bytes:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(spec.seed)
    w, h = spec.width_px, spec.height_px
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 // w, y * 255 // h, (x + y) * 255 // (w + h)], axis=-1).astype(np.int16)
    del x, y
    base += rng.integers(-60, 60, size=(h, w, 3), dtype=np.int16)
    pixels = np.clip(base, 0, 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="JPEG", quality=90, optimize=False)
    return out.getvalue()


def image_path(images_dir: Path, name: str) -> Path:
    return images_dir / f"{name}.jpg"


def ensure_images(images_dir: Path, names: list[str] | None = None) -> list[Path]:
    """Generate missing images and verify every image's hash. Idempotent.

    A file whose hash is wrong is regenerated once; if the fresh render still differs the
    pinned Pillow is not the one installed, and that is an error (payloads would differ).

    Raises:
        ConfigError: a fresh render does not have the pinned hash.
    """
    images_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names or list(IMAGE_SPECS):
        path = image_path(images_dir, name)
        _verified_image(path, IMAGE_SPECS[name])
        paths.append(path)
    return paths


_VERIFIED: dict[Path, tuple[int, int]] = {}
"""Images verified in this process: path -> (size in bytes, mtime in ns) when verified."""


def _file_key(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_size, st.st_mtime_ns


def _verified_image(path: Path, spec: ImageSpec) -> bytes:
    """The bytes of ``path`` once they have ``spec``'s hash (regenerated when they do not).

    An unchanged file (same size and mtime as when this process last verified it) is read
    without hashing it again; anything else is hashed, and a wrong or missing file is
    rendered afresh and written atomically.
    """
    key = _file_key(path)
    if key is not None:
        data = path.read_bytes()
        if _VERIFIED.get(path) == key or _sha256(data) == spec.sha256:
            _VERIFIED[path] = key
            return data
    data = _render_jpeg(spec)
    digest = _sha256(data)
    if digest != spec.sha256:
        raise ConfigError(
            f"generated {path.name} has sha256 {digest[:12]}…, expected {spec.sha256[:12]}…: "
            "install the pinned Pillow (pip install -c constraints.txt -r requirements.txt)"
        )
    atomic_write(path, data)
    new_key = _file_key(path)
    if new_key is not None:
        _VERIFIED[path] = new_key
    return data


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_body(name: str, encoding: str, images_dir: Path) -> bytes:
    """The payload body (without header) for ``name`` in ``encoding`` (raw or base64).

    An image's SHA-256 is verified on every call (see :func:`_verified_image`: a file
    unchanged since this process verified it is not hashed again); a missing or wrong image
    is regenerated.

    Raises:
        ConfigError: an unknown payload, or an image that cannot be rendered identically.
    """
    if name in RANDOM_BODY_SIZES_BYTES:
        size = RANDOM_BODY_SIZES_BYTES[name]
        raw = random.Random(size).randbytes(size)
    elif name in IMAGE_SPECS:
        images_dir.mkdir(parents=True, exist_ok=True)
        raw = _verified_image(image_path(images_dir, name), IMAGE_SPECS[name])
    else:
        raise ConfigError(f"unknown payload {name!r} (known: {', '.join(payload_names())})")
    return base64.b64encode(raw) if encoding == "base64" else raw


def wire_size_bytes(body: bytes) -> int:
    """Bytes on the wire for one message with this body."""
    return HEADER_BYTES + len(body)


def stamp(body: bytes, seq: int, nonce: bytes, base64_body: bool, intended_ts_ns: int = 0) -> bytes:
    """Header (version 2) + body for one message.

    Args:
        body: the payload body.
        seq: the message's sequence number in its cell.
        nonce: the cell's 8 random bytes.
        base64_body: sets the header's base64 flag.
        intended_ts_ns: when the message was meant to be sent (CLOCK_MONOTONIC); 0 in the
            closed loop.
    """
    flags = FLAG_BASE64 if base64_body else 0
    return HEADER.pack(MAGIC, HEADER_VERSION, flags, seq, intended_ts_ns, nonce) + body


def read_stamp(value: bytes | None) -> tuple[int, int, bytes] | None:
    """``(seq, intended_ts_ns, nonce)`` from a message, or None if it is not one of ours
    (too short, another magic, or another header version)."""
    if value is None or len(value) < HEADER_BYTES:
        return None
    magic, version, _flags, seq, intended_ts_ns, nonce = HEADER.unpack_from(value)
    if magic != MAGIC or version != HEADER_VERSION:
        return None
    return seq, intended_ts_ns, nonce
