"""Requests- and tokens-per-minute limits, shared by every thread that calls one model.

Providers publish limits per minute on both requests and tokens, and answer 429 when either is
passed. Waiting *before* sending, with a token bucket per limit that refills continuously, keeps a
run just under the limit instead of bouncing off it; the retry logic still honours ``Retry-After``
for the 429s that slip through (other clients on the same key, estimates that were low).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class _Bucket:
    def __init__(self, per_minute: float, now: float):
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.level = self.capacity
        self.updated = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` is available (0 if it is now)."""
        return max(0.0, (min(amount, self.capacity) - self.level) / self.rate)


class RateLimiter:
    """Blocks callers until both the request and the token budget of the minute allow them."""

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        for name, value in (("requests_per_minute", requests_per_minute), ("tokens_per_minute", tokens_per_minute)):
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        now = clock()
        self._requests = _Bucket(requests_per_minute, now) if requests_per_minute else None
        self._tokens = _Bucket(tokens_per_minute, now) if tokens_per_minute else None
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self.waited_s = 0.0

    def acquire(self, tokens: int) -> float:
        """Wait until one request of about ``tokens`` tokens may go; returns the seconds waited.

        A request larger than the whole per-minute token budget waits for a full bucket and then
        goes, rather than waiting forever.
        """
        waited = 0.0
        while True:
            with self._lock:
                now = self._clock()
                wait = 0.0
                for bucket, amount in ((self._requests, 1.0), (self._tokens, float(tokens))):
                    if bucket is not None:
                        bucket.refill(now)
                        wait = max(wait, bucket.wait_for(amount))
                if wait == 0.0:
                    if self._requests is not None:
                        self._requests.level -= 1.0
                    if self._tokens is not None:
                        self._tokens.level -= min(float(tokens), self._tokens.capacity)
                    self.waited_s += waited
                    return waited
            self._sleep(wait)
            waited += wait

    def settle(self, estimated: int, actual: int) -> None:
        """Correct the token bucket once the real usage of a request is known."""
        if self._tokens is None:
            return
        with self._lock:
            self._tokens.level = min(self._tokens.capacity, self._tokens.level + estimated - actual)
