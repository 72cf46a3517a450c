"""Payloads: seed 000's JPEG images and small random bodies, plus the stamp header.

Images live in ``include/images/<name>.jpg``. They are not committed: ``ensure_images``
generates them deterministically (a seeded gradient-plus-noise picture encoded by the pinned
Pillow) and verifies each file's SHA-256 against ``IMAGE_SPECS``, so every machine measures
byte-identical payloads. ``1kb`` and friends are seeded random bytes made in memory.

Every message on the wire starts with a 32-byte stamp header (works on Kafka 0.9, which has
neither record headers nor record timestamps)::

    offset size  field
    0      4     magic b"KLAB"
    4      2     header version (1), big-endian
    6      2     flags (bit 0: body is base64)
    8      8     seq, unsigned big-endian
    16     8     send_ts_ns (time.time_ns() at send start), unsigned big-endian
    24     8     run nonce (first 8 bytes of the cell's id), to ignore strangers' records
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
    """
    images_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names or list(IMAGE_SPECS):
        spec = IMAGE_SPECS[name]
        path = image_path(images_dir, name)
        if path.exists() and _sha256(path.read_bytes()) == spec.sha256:
            paths.append(path)
            continue
        data = _render_jpeg(spec)
        digest = _sha256(data)
        if spec.sha256 and digest != spec.sha256:
            raise ConfigError(
                f"generated {path.name} has sha256 {digest[:12]}…, expected {spec.sha256[:12]}…: "
                "install the pinned Pillow (pip install -c constraints.txt -r requirements.txt)"
            )
        atomic_write(path, data)
        paths.append(path)
    return paths


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_body(name: str, encoding: str, images_dir: Path) -> bytes:
    """The payload body (without header) for ``name`` in ``encoding`` (raw or base64)."""
    if name in RANDOM_BODY_SIZES_BYTES:
        size = RANDOM_BODY_SIZES_BYTES[name]
        raw = random.Random(size).randbytes(size)
    elif name in IMAGE_SPECS:
        path = image_path(images_dir, name)
        if not path.exists():
            ensure_images(images_dir, [name])
        raw = path.read_bytes()
    else:
        raise ConfigError(f"unknown payload {name!r} (known: {', '.join(payload_names())})")
    return base64.b64encode(raw) if encoding == "base64" else raw


def wire_size_bytes(body: bytes) -> int:
    """Bytes on the wire for one message with this body."""
    return HEADER_BYTES + len(body)


def stamp(body: bytes, seq: int, send_ts_ns: int, nonce: bytes, base64_body: bool) -> bytes:
    """Header + body for one message."""
    flags = FLAG_BASE64 if base64_body else 0
    return HEADER.pack(MAGIC, 1, flags, seq, send_ts_ns, nonce) + body


def read_stamp(value: bytes | None) -> tuple[int, int, bytes] | None:
    """``(seq, send_ts_ns, nonce)`` from a message, or None if it is not one of ours."""
    if value is None or len(value) < HEADER_BYTES:
        return None
    magic, _version, _flags, seq, send_ts_ns, nonce = HEADER.unpack_from(value)
    if magic != MAGIC:
        return None
    return seq, send_ts_ns, nonce
