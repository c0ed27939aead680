"""CVQA items as ``BenchmarkItem``s: native and English question and answer, and a culture term.

Input: ``afaji/cvqa`` (split ``test``) on the Hub, local JSONL/parquet/CSV files in its layout, or
the sample in ``corpora/sample/cvqa`` (written by m4build; see its README). The text columns are
all that is read; the image column is never decoded.

Two cells need care. ``Subset`` is a Python tuple written as text, "('Spanish', 'Mexico')": it is
parsed with ``ast.literal_eval`` (never ``eval``, since the dataset is outside input) and must be
two strings. ``Options``/``Translated Options`` are lists in the current dataset and stringified
lists in an early version; both are read. The public test split hides its answers (``Label`` is
-1); such items are reported as skipped, not guessed.

Which benchmark language code a subset is belongs to the caller (``corpora/languages.yaml``,
field ``cvqa_subset``), so this module takes the mapping as an argument. The culture terms come
from ``corpora/cvqa/queries.yaml``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from m4build.errors import InputFileError, UsageError
from m4build.records import BenchmarkItem, MultipleChoice
from m4build.resources import data_path
from m4build.sources.benchmarks import (
    LoadedItems,
    Row,
    SkippedItem,
    Source,
    check_langs,
    dataset_rows,
    empty_reason,
    finish,
    input_files,
    load_hub_dataset,
    parse_literal,
    read_table,
    require_columns,
    resolve_source,
    string_list,
    text,
)

BENCHMARK = "cvqa"
CVQA_DATASET = "afaji/cvqa"
REQUIRED = ("ID", "Subset", "Question", "Translated Question", "Options", "Translated Options", "Label")
PROVENANCE = {
    "Category": "category",
    "Image Type": "image_type",
    "Image Source": "image_source",
    "License": "license",
}
HIDDEN_LABEL = -1  # what the public test split puts in `Label`
IMAGE = "image"

SubsetKey = tuple[str, str]


def subset_key(language: str, country: str) -> SubsetKey:
    """Case-, space- and underscore-insensitive key: 'Egyptian_Arabic' and 'egyptian arabic' agree."""
    return (
        " ".join(language.replace("_", " ").split()).casefold(),
        " ".join(country.replace("_", " ").split()).casefold(),
    )


def parse_subset(value: Any, origin: str) -> tuple[str, str]:
    """The ``Subset`` cell as (language, country); anything but two non-empty strings is refused."""
    parsed = parse_literal(value, "Subset", origin) if isinstance(value, str) else value
    if (
        not isinstance(parsed, (tuple, list))
        or len(parsed) != 2
        or not all(isinstance(part, str) and part.strip() for part in parsed)
    ):
        raise InputFileError(
            f"{origin}: Subset must be a (language, country) pair of strings, got {value!r:.80}",
            "CVQA writes it as \"('Spanish', 'Mexico')\".",
        )
    return parsed[0].strip(), parsed[1].strip()


@dataclass(frozen=True)
class CultureTerm:
    domain_en: str
    domain: str | None


class CultureTerms:
    """The culture term of each CVQA subset, in English and natively (see queries.yaml)."""

    def __init__(self, english_template: str, subsets: Mapping[SubsetKey, CultureTerm]):
        self.english_template = english_template
        self.subsets = dict(subsets)

    @classmethod
    def from_file(cls, path: Path) -> CultureTerms:
        with path.open(encoding="utf-8") as handle:
            spec = yaml.safe_load(handle)
        template = spec["english_template"]
        subsets = {}
        for entry in spec["subsets"]:
            language, country = entry["subset"]
            subsets[subset_key(language, country)] = CultureTerm(
                entry.get("domain_en") or template.replace("{country}", country), entry.get("domain")
            )
        return cls(template, subsets)

    def term(self, language: str, country: str) -> CultureTerm:
        """The listed term, or the English template with the country for a subset not listed."""
        return self.subsets.get(subset_key(language, country)) or CultureTerm(
            self.english_template.replace("{country}", country), None
        )


@cache
def packaged_terms() -> CultureTerms:
    return CultureTerms.from_file(data_path("corpora", "cvqa", "queries.yaml"))


def load_cvqa(
    langs: Sequence[str],
    *,
    subset_codes: Mapping[tuple[str, str], str] | None = None,
    source: Source = "sample",
    limit_per_lang: int | None = None,
    dataset: str = CVQA_DATASET,
    split: str = "test",
    images: bool = False,
) -> LoadedItems:
    """CVQA items for ``langs`` (see ``m4build.sources.benchmarks.load_items``).

    ``subset_codes`` maps a parsed ``Subset`` (language, country) to a benchmark language code,
    e.g. ``{("Spanish", "Mexico"): "es_mx"}``; it is matched case-, space- and
    underscore-insensitively. Rows of a subset it lacks are reported as skipped ("unknown-subset").
    ``images`` keeps each row's encoded image (for evaluation); corpus building never needs it.
    """
    if not subset_codes:
        raise UsageError(
            "loading CVQA needs subset_codes: which language code each (language, country) subset is",
            "Build it from the cvqa_subset fields of corpora/languages.yaml.",
        )
    codes = {subset_key(*subset): code for subset, code in subset_codes.items()}
    check_langs(langs, set(codes.values()), BENCHMARK)
    requested = set(langs)
    terms = packaged_terms()
    items, skipped = [], []
    for row in _rows(resolve_source(source), dataset, split, images):
        result = _item(row, codes, terms)
        if isinstance(result, SkippedItem):
            skipped.append(result)
        elif result.lang in requested:
            items.append(result)
    return finish(items, skipped, langs, limit_per_lang)


def _rows(source: str | list[Path], dataset: str, split: str, images: bool = False) -> Iterator[Row]:
    if source == "sample":
        yield from read_table(data_path("corpora", "sample", BENCHMARK, "cvqa.jsonl"))
    elif source == "hub":
        loaded = load_hub_dataset(dataset, None, split)
        kept = tuple(PROVENANCE)
        if images and IMAGE in loaded.column_names:
            from datasets import Image

            loaded = loaded.cast_column(IMAGE, Image(decode=False))  # encoded bytes, never decoded here
            kept += (IMAGE,)
        yield from dataset_rows(loaded, f"{dataset} ({split})", REQUIRED, kept)
    else:
        for path in input_files(source):
            yield from read_table(path)


def _item(row: Row, codes: Mapping[SubsetKey, str], terms: CultureTerms) -> BenchmarkItem | SkippedItem:
    data = row.data
    require_columns(data.keys(), REQUIRED, row.origin)
    cvqa_id = text(data["ID"])
    if not cvqa_id:
        raise InputFileError(f"{row.origin}: empty ID")
    item_id, where = f"{BENCHMARK}/{cvqa_id}", f"{row.origin} (ID {cvqa_id})"
    language, country = parse_subset(data["Subset"], where)
    lang = codes.get(subset_key(language, country))
    if lang is None:
        return SkippedItem(item_id, "", "unknown-subset", f"({language!r}, {country!r}) has no language code")
    label = _label(data["Label"], where)
    if label == HIDDEN_LABEL:
        return SkippedItem(item_id, lang, "hidden-label", "Label is -1 (the public test split hides answers)")
    options = string_list(data["Options"], "Options", where)
    translated = string_list(data["Translated Options"], "Translated Options", where)
    if not 0 <= label < len(options):
        raise InputFileError(f"{where}: Label {label} is outside the {len(options)} Options")
    question, answer = text(data["Question"]), options[label]
    reason = empty_reason(question, answer)
    if reason:
        return SkippedItem(item_id, lang, reason, where)
    term = terms.term(language, country)
    return BenchmarkItem(
        benchmark=BENCHMARK,
        item_id=item_id,
        lang=lang,
        question=question,
        answer=answer,
        question_en=text(data["Translated Question"]) or None,
        answer_en=(translated[label] or None) if label < len(translated) else None,
        domain_en=term.domain_en,
        domain=term.domain,
        extra=_extra(data, cvqa_id, language, country),
        choice=MultipleChoice(
            options=tuple(options),
            answer_index=label,
            options_en=tuple(translated),
            image=_image_bytes(data.get(IMAGE)),
        ),
    )


def _image_bytes(value: Any) -> bytes | None:
    """The encoded image of a row: ``{"bytes": ...}`` as datasets stores it, or bytes as they are."""
    if isinstance(value, dict):
        value = value.get("bytes")
    return bytes(value) if isinstance(value, (bytes, bytearray)) and value else None


def _label(value: Any, origin: str) -> int:
    if isinstance(value, bool):
        raise InputFileError(f"{origin}: Label must be a whole number, got {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise InputFileError(f"{origin}: Label must be a whole number, got {value!r}") from exc


def _extra(data: Mapping[str, Any], cvqa_id: str, language: str, country: str) -> dict[str, str]:
    extra = {"cvqa_id": cvqa_id, "subset_language": language, "country": country}
    extra.update({key: text(data[column]) for column, key in PROVENANCE.items() if text(data.get(column))})
    return extra
