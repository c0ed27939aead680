"""How m4build behaves towards Wikimedia servers: who it says it is, and how long it waits.

The Wikimedia User-Agent policy (https://meta.wikimedia.org/wiki/User-Agent_policy) asks every
automated client to name itself and give a way to reach its operator; clients without one may be
blocked. So a live run refuses to start without contact details rather than sending a generic
agent. The waiting rules live here, apart from the HTTP code, so that they can be tested without a
network and read in one place.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

import mwclient

from m4build import __version__
from m4build.errors import ConfigError

CONTACT_ENV = "M4BUILD_CONTACT"
USER_AGENT_ENV = "M4BUILD_USER_AGENT"

_EMAIL = re.compile(r"[^@\s()<>;]+@[^@\s()<>;]+\.[^@\s()<>;]+")
_URL = re.compile(r"https?://[^\s()<>;]+\.[^\s()<>;]+")

_HOW_TO_SET = (
    f"Pass --contact you@example.org (or set `contact:` in the recipe), or run "
    f"`export {CONTACT_ENV}=you@example.org`; a project URL such as https://example.org/me works too. "
    f"To send a complete User-Agent of your own, `export {USER_AGENT_ENV}='mytool/1.0 (you@example.org)'`."
)


def build_user_agent(contact: str | None, *, environ: Mapping[str, str] | None = None) -> str:
    """The User-Agent a live run sends: ``m4build/{version} ({contact}) mwclient/{version}``.

    ``contact`` comes from the command line or the recipe; without it, ``M4BUILD_CONTACT`` is used.
    A complete ``M4BUILD_USER_AGENT`` replaces the built string (for operators whose organisation
    prescribes its own agent), but it too must carry an email address or URL.

    Raises ``ConfigError`` when no usable contact is found, saying how to give one.
    """
    env = os.environ if environ is None else environ
    override = env.get(USER_AGENT_ENV, "").strip()
    if override:
        if not _has_contact(override):
            raise ConfigError(
                f"{USER_AGENT_ENV}={override!r} has no email address or URL to contact you by, "
                "which the Wikimedia User-Agent policy requires.",
                _HOW_TO_SET,
            )
        return override
    contact = (contact or env.get(CONTACT_ENV, "")).strip()
    if not contact:
        raise ConfigError(
            "A live Wikipedia run needs contact details for its User-Agent "
            "(Wikimedia User-Agent policy), and none were given.",
            _HOW_TO_SET,
        )
    if not (_EMAIL.fullmatch(contact) or _URL.fullmatch(contact)):
        raise ConfigError(
            f"Contact {contact!r} is neither an email address nor an http(s) URL.",
            _HOW_TO_SET,
        )
    return f"m4build/{__version__} ({contact}) mwclient/{mwclient.__version__}"


def _has_contact(text: str) -> bool:
    return bool(_EMAIL.search(text) or _URL.search(text))


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
