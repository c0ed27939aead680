"""Images for evaluation items: from the rows, from a local folder, or downloaded once and kept.

CVQA rows embed their images; WorldCuisines rows point at Wikimedia Commons. Downloads go through
one polite client (a User-Agent with contact details, bounded concurrency, retries that honour
``Retry-After``) into a content cache in the run folder, so a rerun downloads nothing. Every item's
image is resolved before any model is called: items without one are reported together, with
counts and examples, instead of failing one by one in the middle of a paid run.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import unquote, urlsplit

import requests

from m4build.backoff import Backoff, retry_after_seconds
from m4build.errors import InputFileError
from m4build.eval.m4rag.items import EvalItem
from m4build.progress import NullProgress, ProgressReporter
from m4build.runs import atomic_write_bytes

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif")
DOWNLOAD_ATTEMPTS = 4
DOWNLOAD_TIMEOUT_S = 60.0
DOWNLOAD_WORKERS = 4


class ImageStore:
    """Where each item's image comes from, and the bytes once found."""

    def __init__(
        self,
        cache_dir: Path,
        *,
        folder: Path | None = None,
        user_agent: str | None = None,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.cache_dir = cache_dir
        self.folder = folder
        self.user_agent = user_agent
        self._session = session or requests.Session()
        self._backoff = Backoff(base=1.0, cap=30.0)
        self._sleep = sleep
        self.downloads = 0

    def resolve(self, items: Sequence[EvalItem], progress: ProgressReporter | None = None) -> dict[str, bytes]:
        """Image bytes per item id; raises one ``InputFileError`` listing every item without one."""
        progress = progress or NullProgress()
        found: dict[str, bytes] = {}
        missing: dict[str, str] = {}
        with progress.task("images", total=len(items)) as advance, ThreadPoolExecutor(DOWNLOAD_WORKERS) as pool:
            for item, (image, why) in zip(items, pool.map(self._image, items)):
                if image is None:
                    missing[item.item_id] = why
                else:
                    found[item.item_id] = image
                advance(1)
        if missing:
            examples = "; ".join(f"{item_id}: {why}" for item_id, why in list(missing.items())[:3])
            raise InputFileError(
                f"{len(missing)} of {len(items)} items have no image (e.g. {examples}).",
                "Pass --images DIR with the benchmark's images (named as in the image URLs), or run "
                "where the image URLs can be downloaded (with --contact for the User-Agent).",
            )
        return found

    def _image(self, item: EvalItem) -> tuple[bytes | None, str]:
        if item.image:
            return item.image, ""
        local = self._from_folder(item)
        if local is not None:
            return local, ""
        if not item.image_url:
            return None, "the row has neither an image nor an image URL"
        cached = self._cache_path(item.image_url)
        if cached.is_file():
            return cached.read_bytes(), ""
        if self.user_agent is None:
            return None, f"{item.image_url} is not in --images and downloads are off (no contact given)"
        return self._download(item.image_url, cached)

    def _from_folder(self, item: EvalItem) -> bytes | None:
        if self.folder is None:
            return None
        names = [file_name(item.image_url)] if item.image_url else []
        names += [f"{item.item_id.replace('/', '_')}{suffix}" for suffix in IMAGE_SUFFIXES]
        for name in names:
            path = self.folder / name
            if name and path.is_file():
                return path.read_bytes()
        return None

    def _cache_path(self, url: str) -> Path:
        digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:32]
        return self.cache_dir / f"{digest}{Path(file_name(url)).suffix.lower()}"

    def _download(self, url: str, target: Path) -> tuple[bytes | None, str]:
        why = ""
        for attempt in range(1, DOWNLOAD_ATTEMPTS + 1):
            try:
                response = self._session.get(url, headers={"User-Agent": self.user_agent}, timeout=DOWNLOAD_TIMEOUT_S)
            except requests.RequestException as error:
                why, retry_after = f"{url}: {type(error).__name__}", None
            else:
                if response.status_code == 200 and response.content:
                    atomic_write_bytes(target, response.content)
                    self.downloads += 1
                    return response.content, ""
                why = f"{url}: HTTP {response.status_code}"
                if response.status_code not in (429, 500, 502, 503, 504):
                    return None, why
                retry_after = retry_after_seconds(response.headers.get("Retry-After"))
            if attempt < DOWNLOAD_ATTEMPTS:
                self._sleep(self._backoff.delay(attempt, retry_after))
        return None, why


def file_name(url: str) -> str:
    """The file name in an image URL, decoded, without the query (``…/Crepes_dsc07085.jpg?download``)."""
    return unquote(Path(urlsplit(url).path).name)
