"""How long to wait before trying a remote service again.

Wikipedia, the Hub and LLM providers all answer overload the same way (429 or 503, often with
``Retry-After``), so every client in m4build waits by the same rules, kept here in one place so
they can be tested without a network.
"""

from __future__ import annotations

import random
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime


class Backoff:
    """Exponential backoff with full jitter, capped, that never waits less than the server asks.

    Full jitter (a uniform draw below the exponential ceiling) spreads the retries of many
    threads that failed together, so they do not hit a recovering server in lockstep. A server's
    ``Retry-After`` is a floor: waiting less would be impolite and likely fail again. It is itself
    bounded by ``max_retry_after`` so that one absurd header cannot stall a run for hours; the
    retry budget then decides.
    """

    def __init__(
        self,
        base: float = 1.0,
        cap: float = 60.0,
        rng: random.Random | None = None,
        *,
        max_retry_after: float = 600.0,
    ) -> None:
        if base <= 0 or cap < base:
            raise ValueError(f"backoff needs 0 < base <= cap, got base={base}, cap={cap}")
        self.base = base
        self.cap = cap
        self.max_retry_after = max_retry_after
        self._rng = rng or random.Random()

    def ceiling(self, retry: int) -> float:
        """The longest jittered wait before retry number ``retry`` (1 for the first retry)."""
        return min(self.cap, self.base * 2 ** (retry - 1))

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry``, honouring a server's ``Retry-After``."""
        wait = self._rng.uniform(0.0, self.ceiling(retry))
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_retry_after))
        return wait


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks for, or ``None`` when absent or unreadable.

    HTTP allows either a number of seconds or an HTTP date (RFC 9110, 10.2.3); a date in the past
    means "now" (0 seconds).
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        return _seconds_until(text, now)
    return seconds if seconds >= 0 else None


def _seconds_until(http_date: str, now: datetime | None) -> float | None:
    try:
        when = parsedate_to_datetime(http_date)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())
