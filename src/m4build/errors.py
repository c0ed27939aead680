"""The one exception type a user ever sees.

Every user mistake (bad flag, unknown language, malformed file, missing credentials) raises
``M4BuildError`` with a message that names the bad input and a hint that says what to do; the CLI
prints both and exits with the error's code, never with a traceback.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Stable exit codes of the ``m4build`` command."""

    OK = 0
    FAILURE = 1  # the job ran but some work failed (recorded in the manifest)
    USAGE = 2  # bad flags, unknown benchmark or language
    INPUT = 3  # unreadable or malformed input file
    CONFIG = 4  # missing credentials or contact details
    REMOTE = 5  # a remote service kept failing
    INTERRUPTED = 130


class M4BuildError(Exception):
    """A problem the user can fix: what went wrong and how to fix it."""

    exit_code: ExitCode = ExitCode.FAILURE

    def __init__(self, message: str, hint: str | None = None, *, exit_code: ExitCode | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n{self.hint}"


class UsageError(M4BuildError):
    exit_code = ExitCode.USAGE


class InputFileError(M4BuildError):
    exit_code = ExitCode.INPUT


class ConfigError(M4BuildError):
    exit_code = ExitCode.CONFIG


class RemoteError(M4BuildError):
    exit_code = ExitCode.REMOTE
