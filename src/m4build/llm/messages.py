"""Chat messages with text and images, the one input shape every provider is given.

Images travel as bytes with their media type, so the cache can key them by content (a hash, never
the path or the base64 text) and each provider can encode them its own way: a data URL for
OpenAI-compatible servers, inline data for Gemini.
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from m4build.errors import InputFileError

Role = Literal["system", "user", "assistant"]

_SIGNATURES = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}


@dataclass(frozen=True)
class ImagePart:
    """An image given to a vision-language model."""

    data: bytes = field(repr=False)
    mime_type: str

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str | None = None) -> ImagePart:
        return cls(data, mime_type or sniff_mime_type(data))

    @classmethod
    def from_path(cls, path: Path | str) -> ImagePart:
        path = Path(path)
        try:
            data = path.read_bytes()
        except OSError as error:
            raise InputFileError(f"Cannot read image {path}: {error.strerror}.", "Check the path.")
        guessed = mimetypes.guess_type(path.name)[0]
        return cls(data, sniff_mime_type(data, fallback=guessed))

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        return f"data:{self.mime_type};base64,{self.base64()}"


def sniff_mime_type(data: bytes, fallback: str | None = None) -> str:
    """The image type from its first bytes; file names lie more often than headers."""
    for signature, mime in _SIGNATURES.items():
        if data.startswith(signature):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return fallback or "application/octet-stream"


@dataclass(frozen=True)
class Message:
    """One chat turn: a role, its text and any images (only user turns carry images)."""

    role: Role
    text: str
    images: tuple[ImagePart, ...] = ()

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", text)

    @classmethod
    def user(cls, text: str, images: Sequence[ImagePart] = ()) -> Message:
        return cls("user", text, tuple(images))

    @classmethod
    def assistant(cls, text: str) -> Message:
        return cls("assistant", text)

    def key(self) -> dict[str, object]:
        """The message as it enters a cache key: images by hash and type, never by bytes."""
        return {
            "role": self.role,
            "text": self.text,
            "images": [[image.sha256, image.mime_type] for image in self.images],
        }
