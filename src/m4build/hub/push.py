"""Uploading a repo folder to the Hub with huggingface_hub.

``upload_folder`` is the whole upload. In huggingface_hub 2.x (with ``hf_xet``, one of its own
requirements) it streams files in several commits and, when rerun after a failure, skips the
files already committed and deduplicates the bytes already sent: rerunning ``m4build push``
resumes. (``upload_large_folder``, the older resumable API, is gone from 2.x.)

Remote files under ``data/`` and ``indexes/`` that the new folder no longer has are deleted in
the same upload (``delete_patterns``): a config's glob such as ``data/corpus/en/train-*.parquet``
would otherwise also match the shards of an earlier, differently sharded push.
"""

from __future__ import annotations

from pathlib import Path

import huggingface_hub
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

from m4build.errors import ConfigError, UsageError
from m4build.hub.remote import TOKEN_HINT, hub_endpoint, hub_errors
from m4build.hub.repo import MARKER, TEMP_SUFFIX

REPO_TYPE = "dataset"
DEFAULT_BRANCH = "main"
OWNED_PATTERNS = ["data/*", "indexes/*"]
NEVER_UPLOADED = [MARKER, f"*{TEMP_SUFFIX}"]


def hub_token() -> str:
    """The token huggingface_hub would use (HF_TOKEN, then the cached login); checked before any work."""
    token = huggingface_hub.get_token()
    if not token:
        raise ConfigError(f"no Hugging Face token found for {hub_endpoint()}", TOKEN_HINT)
    return token


def check_repo_id(repo_id: str) -> None:
    """``org/name``: the card's examples and ``load_dataset`` need the namespace spelled out."""
    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise UsageError(f"--repo {repo_id!r} is not a valid repo id: {error}", "Use org/name.") from error
    if repo_id.count("/") != 1:
        raise UsageError(
            f"--repo {repo_id!r} needs a namespace", "Use org/name, e.g. my-lab/m4rag-worldcuisines."
        )


def push_folder(
    folder: Path, repo_id: str, *, token: str, private: bool = False, revision: str | None = None
) -> str:
    """Create the dataset repo (and branch) if needed and upload ``folder``; returns the commit URL."""
    api = huggingface_hub.HfApi(endpoint=hub_endpoint(), token=token)
    with hub_errors(repo_id, "create"):
        api.create_repo(repo_id, repo_type=REPO_TYPE, private=private or None, exist_ok=True)
        if private:
            refuse_public(api, repo_id)
        if revision and revision != DEFAULT_BRANCH:
            api.create_branch(repo_id, branch=revision, repo_type=REPO_TYPE, exist_ok=True)
    with hub_errors(repo_id, "upload to"):
        commit = api.upload_folder(
            repo_id=repo_id,
            folder_path=folder,
            repo_type=REPO_TYPE,
            revision=revision,
            commit_message=f"Upload with m4build from {folder.name}",
            ignore_patterns=list(NEVER_UPLOADED),
            delete_patterns=list(OWNED_PATTERNS),
        )
    return commit.commit_url


def refuse_public(api: huggingface_hub.HfApi, repo_id: str) -> None:
    """``create_repo`` ignores ``private`` for an existing repo; never publish what was meant private."""
    if not api.repo_info(repo_id, repo_type=REPO_TYPE).private:
        raise UsageError(
            f"--private was given but {repo_id} already exists and is public; nothing was uploaded",
            "Make the repo private in its settings on the Hub first, or push without --private.",
        )
