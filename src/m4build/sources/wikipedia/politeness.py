"""How m4build introduces itself to Wikimedia servers.

The Wikimedia User-Agent policy (https://meta.wikimedia.org/wiki/User-Agent_policy) asks every
automated client to name itself and give a way to reach its operator; clients without one may be
blocked. So a live run refuses to start without contact details rather than sending a generic
agent. The waiting rules live here, apart from the HTTP code, so that they can be tested without a
network and read in one place.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

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
