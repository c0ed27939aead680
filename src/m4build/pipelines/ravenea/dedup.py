"""Images that cannot be decoded, and images that are the same picture twice.

RAVENEA's release removed duplicates (1,962 images became 1,868). Exact copies share a SHA-256;
re-encoded or resized copies do not, so a 64-bit difference hash (dHash: brightness gradients of a
9x8 greyscale thumbnail) catches them too, at a Hamming distance of at most ``max_distance``. Of a
group of copies the largest picture is kept (a thumbnail never replaces its original), file name
breaking ties, and every dropped one names the one it duplicates.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass

from m4build.pipelines.ravenea.inputs import ImageInstance

DEFAULT_MAX_DISTANCE = 4  # of 64 bits: re-encodings and resizes stay within it, different photos do not


@dataclass(frozen=True)
class Dropped:
    file_name: str
    reason: str  # "undecodable", "exact-duplicate", "near-duplicate"
    detail: str


def difference_hash(image: bytes) -> int:
    """The 64-bit dHash of an encoded image; raises ``ValueError`` when it cannot be decoded."""
    return _fingerprint(image)[0]


def _fingerprint(image: bytes) -> tuple[int, int]:
    """(dHash, pixel count) of an encoded image; ``ValueError`` when it cannot be decoded."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(image)) as opened:
            pixels = opened.width * opened.height
            grey = opened.convert("L").resize((9, 8), Image.Resampling.LANCZOS)
    except (UnidentifiedImageError, OSError) as error:
        what = "not an image PIL can read" if isinstance(error, UnidentifiedImageError) else str(error)
        raise ValueError(what) from None
    values = list(grey.tobytes())  # one byte per pixel in mode "L", row by row
    bits = 0
    for row in range(8):
        for column in range(8):
            bits = (bits << 1) | (values[row * 9 + column] > values[row * 9 + column + 1])
    return bits, pixels


def deduplicate(
    instances: Sequence[ImageInstance], max_distance: int = DEFAULT_MAX_DISTANCE
) -> tuple[list[ImageInstance], list[Dropped]]:
    """The instances to keep (file-name order) and the ones dropped, each with why."""
    dropped: list[Dropped] = []
    readable: list[tuple[int, int, str, ImageInstance]] = []  # (-pixels, dHash, sha, instance)
    for instance in instances:
        try:
            fingerprint, pixels = _fingerprint(instance.image)
        except ValueError as error:
            dropped.append(Dropped(instance.file_name, "undecodable", str(error)))
            continue
        readable.append((-pixels, fingerprint, hashlib.sha256(instance.image).hexdigest(), instance))
    kept: list[ImageInstance] = []
    by_sha: dict[str, str] = {}
    hashes: list[tuple[int, str]] = []
    for _size, fingerprint, sha, instance in sorted(readable, key=lambda entry: (entry[0], entry[3].file_name)):
        if sha in by_sha:
            dropped.append(Dropped(instance.file_name, "exact-duplicate", f"same bytes as {by_sha[sha]}"))
            continue
        twin = next((name for other, name in hashes if (other ^ fingerprint).bit_count() <= max_distance), None)
        if twin is not None:
            dropped.append(Dropped(instance.file_name, "near-duplicate", f"looks like {twin}"))
            continue
        by_sha[sha] = instance.file_name
        hashes.append((fingerprint, instance.file_name))
        kept.append(instance)
    return sorted(kept, key=lambda i: i.file_name), sorted(dropped, key=lambda d: d.file_name)
