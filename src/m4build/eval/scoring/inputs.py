"""Reading the files a scoring command is given: prediction files and benchmark tables.

Predictions made elsewhere arrive as JSONL (one object a line: the WorldCuisines repository's
``evaluation/result/*_pred*.jsonl``) or as a JSON array (M4-RAG's ``src/evaluation/eval_cvqa.py``
reads both). Every record keeps the file and line it came from, because every problem found later
(an id the benchmark lacks, a duplicate, a missing column) must point the user at the exact line.
Benchmark tables (JSONL, parquet, CSV, or a Hub dataset) are read with the same row readers the
corpus builders use (:mod:`m4build.sources.benchmarks`), so both report trouble alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from m4build.errors import InputFileError, RemoteError, UsageError
from m4build.metrics.checks import InputProblems
from m4build.sources.benchmarks import TABLE_SUFFIXES, Row, input_files, load_hub_dataset, read_table

T = TypeVar("T")

PREDICTION_SUFFIXES = (".jsonl", ".json")
MODES = ("default", "parity")
# An `owner/name` Hugging Face dataset id; anything with a table suffix is always taken as a path.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def checked_mode(mode: str) -> str:
    """``default`` (corrected scoring) or ``parity`` (the reference scorer's behaviour), else a UsageError."""
    if mode not in MODES:
        raise UsageError(
            f"Unknown scoring mode {mode!r}.",
            "Use --mode default (corrected answer parsing) or --mode parity (the reference scorer's way).",
        )
    return mode


def prediction_files(paths: Sequence[Path]) -> list[Path]:
    """The prediction files named by ``paths``, a folder standing for the JSON/JSONL files in it.

    A path that does not exist, or a folder without prediction files, is a usage error: scoring
    fewer predictions than the user meant to would report a number for a different run.
    """
    if not paths:
        raise UsageError("No prediction files given.", "Pass --predictions FILE (repeat it for more files).")
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in PREDICTION_SUFFIXES)
            if not found:
                raise UsageError(
                    f"No .jsonl or .json files in the folder {path}.", "Pass the prediction files."
                )
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"No such prediction file: {path}", "Check the path given to --predictions.")
    resolved = [path.resolve() for path in files]
    repeated = sorted({str(path) for path, full in zip(files, resolved) if resolved.count(full) > 1})
    if repeated:
        raise UsageError(
            f"Prediction file given more than once: {', '.join(repeated)}",
            "Pass each file once (a folder already includes the files inside it).",
        )
    return files


def collect_predictions(
    files: Sequence[Path], parse: Callable[[Row, InputProblems], T | None], problems: InputProblems
) -> list[T]:
    """Every prediction the files hold, read by ``parse``; rows it cannot use go to ``problems``."""
    found: list[T] = []
    for path in files:
        for row in read_prediction_file(path):
            prediction = parse(row, problems)
            if prediction is not None:
                found.append(prediction)
    if not found and not problems:
        problems.add("files without a single prediction", ", ".join(str(path) for path in files))
    return found


def read_prediction_file(path: Path) -> list[Row]:
    """Every record of a JSONL file or of a JSON array, each tagged with its file and line (item)."""
    if path.suffix == ".json":
        return _read_json_array(path)
    if path.suffix != ".jsonl":
        raise InputFileError(
            f"{path}: prediction files must be .jsonl (one JSON object a line) or .json (an array).",
            "Rename the file or convert it to JSONL.",
        )
    return read_table(path)


def _read_json_array(path: Path) -> list[Row]:
    try:
        decoded = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputFileError(f"{path}: cannot be read ({exc})") from exc
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{path}: not UTF-8 text ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise InputFileError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg})", "A .json prediction file is one JSON array."
        ) from exc
    if not isinstance(decoded, list):
        raise InputFileError(
            f"{path}: expected a JSON array of objects, got {type(decoded).__name__}",
            "Write the predictions as a JSON array, or as JSONL with one object a line.",
        )
    rows = []
    for index, record in enumerate(decoded):
        if not isinstance(record, dict):
            raise InputFileError(f"{path} item {index}: expected a JSON object, got {type(record).__name__}")
        rows.append(Row(record, f"{path} item {index}"))
    return rows


def is_hub_id(value: str) -> bool:
    """True for ``owner/name`` strings that name no local file and carry no table suffix."""
    return (
        not Path(value).exists()
        and not value.endswith((*TABLE_SUFFIXES, ".json"))
        and _HUB_ID.fullmatch(value) is not None
    )


def hub_dataset(name: str, config: str | None, split: str, flag: str) -> Any:
    """A Hub dataset split through ``datasets``; when it cannot be loaded, the hint names ``flag``."""
    try:
        return load_hub_dataset(name, config, split)
    except RemoteError as error:
        raise RemoteError(
            error.message,
            f"Check the dataset id, config and split and your connection, or pass local files to {flag}.",
        ) from error


def local_table_rows(sources: Iterable[str], flag: str) -> Iterator[Row]:
    """Rows of local JSONL/parquet/CSV files and folders; a missing path is a usage error naming ``flag``."""
    paths = []
    for source in sources:
        path = Path(source)
        if not path.exists():
            raise UsageError(
                f"No such file or folder: {source}",
                f"Pass existing {'/'.join(TABLE_SUFFIXES)} files or folders, or a Hub dataset id, to {flag}.",
            )
        paths.append(path)
    for path in input_files(paths):
        yield from read_table(path)


def cell_text(value: Any) -> str | None:
    """A cell as an identifier string: text stripped, integers as decimals; anything else is None."""
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def cell_integer(value: Any) -> int | None:
    """A whole number given as an integer, a whole float or a decimal string; anything else is None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d{1,9}\s*", value):
        return int(value)
    return None
