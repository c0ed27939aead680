"""Every model answer, stored by what was asked, so a rerun costs nothing.

The key is a hash of everything that decides the answer — provider, model, messages (images by
content hash), generation parameters, output schema and prompt version — and nothing else: not
the API key, not the server address, not the time. The store is SQLite in WAL mode: each answer is
one committed transaction, so a process killed mid-write loses at most the answer it was writing
and never corrupts the others, and several processes (or threads, each with its own connection)
can write at once, waiting on SQLite's lock rather than failing.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from m4build.llm.providers.base import ChatResponse

CACHE_ENV = "M4BUILD_LLM_CACHE"
SCHEMA_VERSION = 1
_BUSY_TIMEOUT_S = 60.0


def default_cache_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$M4BUILD_LLM_CACHE``, else ``$XDG_CACHE_HOME/m4build/llm.sqlite`` (``~/.cache`` by default)."""
    env = os.environ if environ is None else environ
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV]).expanduser()
    base = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "m4build" / "llm.sqlite"


def request_key(parts: Mapping[str, Any]) -> str:
    """The cache key of one request: a hash of its canonical JSON."""
    canonical = json.dumps(
        {"cache_schema": SCHEMA_VERSION, **parts}, sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """A content-keyed store of chat responses, safe for concurrent writers and sudden death."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        connection = self._connection()
        _retry_while_locked(lambda: connection.execute("PRAGMA journal_mode=WAL"))
        connection.execute(
            "CREATE TABLE IF NOT EXISTS responses ("
            " key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL,"
            " response TEXT NOT NULL, created_at TEXT NOT NULL)"
        )

    def _connection(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
            connection.execute("PRAGMA synchronous=NORMAL")  # WAL itself is a property of the file
            self._local.connection = connection
        return connection

    def get(self, key: str) -> ChatResponse | None:
        row = self._connection().execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return ChatResponse.from_dict(json.loads(row[0])) if row else None

    def put(self, key: str, provider: str, model: str, response: ChatResponse) -> None:
        """Store ``response`` unless another writer already stored one for ``key`` (first wins)."""
        self._connection().execute(
            "INSERT OR IGNORE INTO responses (key, provider, model, response, created_at) VALUES (?, ?, ?, ?, ?)",
            (key, provider, model, json.dumps(response.as_dict(), ensure_ascii=False), _now()),
        )

    def __len__(self) -> int:
        return int(self._connection().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None


def _retry_while_locked(statement: Callable[[], object]) -> None:
    """Switching to WAL needs a moment alone with the file, which SQLite's busy timeout does not
    wait for; another process opening the cache at the same instant makes it fail, so try again."""
    deadline = time.monotonic() + _BUSY_TIMEOUT_S
    while True:
        try:
            statement()
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()
