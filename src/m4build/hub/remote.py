"""The Hub as huggingface_hub sees it: endpoint, offline mode, and its errors in our words.

Settings come from the standard HF environment, read when a command runs (not when a module is
imported), so ``HF_ENDPOINT=... m4build push`` and ``HF_HUB_OFFLINE=1`` behave as users of other
HF tools expect. Every huggingface_hub failure becomes one ``M4BuildError`` that names the repo
and the fix; the CLI prints it without a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2  # huggingface_hub's HTTP client; its transport errors are not wrapped
from huggingface_hub import constants
from huggingface_hub.errors import (
    HfHubHTTPError,
    LocalEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from m4build.errors import ConfigError, RemoteError, UsageError

TOKEN_HINT = (
    "Set HF_TOKEN to a token with write access (https://huggingface.co/settings/tokens) or run "
    "`hf auth login`; HF_ENDPOINT selects another Hub."
)
RESUME_HINT = "Run the same command again: files already uploaded are skipped, so the upload resumes."


def hub_endpoint() -> str:
    """The Hub URL in effect: ``HF_ENDPOINT`` if set now, else huggingface_hub's default."""
    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def offline_mode() -> bool:
    """``HF_HUB_OFFLINE`` as huggingface_hub interprets it, read at call time."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return value.strip().upper() in {"1", "ON", "YES", "TRUE"}


@contextmanager
def hub_errors(repo_id: str, action: str) -> Iterator[None]:
    """Turn what huggingface_hub raises while doing ``action`` on ``repo_id`` into one clear error."""
    endpoint = hub_endpoint()
    try:
        yield
    except RevisionNotFoundError as error:
        raise UsageError(f"{repo_id} has no such revision ({action})", "Check --revision.") from error
    except RepositoryNotFoundError as error:
        raise UsageError(
            f"no dataset repo {repo_id} on {endpoint} ({action}), and no local folder of that name",
            "Check the repo id (org/name) or the folder path; a private repo also needs HF_TOKEN.",
        ) from error
    except LocalEntryNotFoundError as error:
        raise RemoteError(
            f"{repo_id} is not in the local HF cache and the Hub at {endpoint} could not be asked ({action})",
            "Connect once (and unset HF_HUB_OFFLINE) so the files are cached; later runs work offline.",
        ) from error
    except HfHubHTTPError as error:
        raise _http_error(error, repo_id, action, endpoint) from error
    except (httpx2.HTTPError, ConnectionError, TimeoutError) as error:
        raise RemoteError(
            f"could not reach the Hub at {endpoint} while trying to {action} {repo_id}: {error}",
            f"Check the network and HF_ENDPOINT. {RESUME_HINT}",
        ) from error


def _http_error(error: HfHubHTTPError, repo_id: str, action: str, endpoint: str) -> Exception:
    status = error.response.status_code if error.response is not None else None
    detail = error.server_message or str(error).splitlines()[0]
    if status == 401:
        return ConfigError(
            f"the Hub at {endpoint} refused the token ({action} {repo_id}): {detail}", TOKEN_HINT
        )
    if status == 403:
        return ConfigError(
            f"the token may not {action} {repo_id} on {endpoint}: {detail}",
            "Use a token with write access to that namespace (HF_TOKEN or `hf auth login`).",
        )
    return RemoteError(
        f"the Hub at {endpoint} answered {status} to {action} {repo_id}: {detail}", RESUME_HINT
    )
