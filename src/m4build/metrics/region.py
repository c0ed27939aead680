"""RegionScore: does a culture-informed caption name the country its image comes from?

Reference definition
--------------------
RAVENEA (Li et al., "RAVENEA: A Benchmark for Multimodal Retrieval-Augmented Visual Culture
Understanding", ICLR 2026) scores each caption of its culture-informed captioning task 1 when it
mentions the image's country, by name or by an adjective or demonym, and 0 otherwise;
RegionScore is the mean, over all captions and per country. The peer code is
yfyuan01/RAVENEA ``src/helper.py`` ``region_score()`` (called from ``src/metrics.py``):

- the terms of a country are ``country_dict.get(country, []) + [country]``, with
  ``country_dict`` holding five countries: Nigeria [Nigerian], Korea [Korean, Seoul],
  China [Chinese, Shanghai, Beijing], Mexico [Mexican], India [Indian]; RAVENEA's other
  countries (Russia, Spain, Indonesia) are matched by their name alone;
- a caption mentions the country when ``term.lower() in caption.lower()`` for any term: a plain
  substring test;
- the score is reported ×100, rounded to one decimal (we return the fraction).

Modes
-----
``ravenea``
    The peer's computation exactly, with its term lists verbatim (``demonyms.yaml``, ``parity``).
``default``
    Our corrected version; it differs in these ways:

    1. *Whole words.* A substring test finds India in "Indiana", Niger in "Nigerian" and China
       in "Indochinese". We match whole words only (letters and digits delimit words), after
       NFKC, case folding and removal of accents ("Türkiye" and "Turkiye" meet).
    2. *Full term lists.* Every UN member state, the UN observer states, Taiwan and Kosovo, each
       with its names, adjectives and demonyms (``demonyms.yaml``). The peer lists none for
       Spain, so "a Spanish paella" does not mention Spain; for Russia and Indonesia only its
       substring test finds "Russian" and "Indonesian" (by their country names inside).
    3. *The longest phrase wins.* "North Korean" names North Korea, not South Korea through
       "Korean"; "Papua New Guinea" is not Guinea; "Indian Ocean", "New Mexico" or "guinea pig"
       name no country. At each word, the longest listed phrase is taken, then matching resumes
       after it.
    4. *Countries, not cities.* The peer counts Seoul for Korea and Shanghai and Beijing for China
       but no other country's cities; we count country terms only.
    5. *Reasoning is not the caption* (as in m4build.metrics.char_ngram): a ``<think>`` block is
       removed first; a caption with nothing after it scores 0 and is counted in ``no_caption``.
    6. *Bad input is refused* (both modes): unknown or ambiguous countries (with the closest
       known names), missing or empty captions, ids that do not match.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

import yaml

from m4build.errors import InputFileError, UsageError
from m4build.metrics.checks import InputProblems, check_same_ids, is_missing_number
from m4build.text.reasoning import strip_reasoning

RegionMode = Literal["default", "ravenea"]
REGION_MODES: tuple[str, ...] = ("default", "ravenea")

_WHAT = "RegionScore"
_HINT = (
    "give every caption id a non-empty caption and a country, named in English or by its "
    "ISO 3166-1 alpha-2 code (e.g. 'India', 'IN', 'South Korea')"
)
_STATUSES = ("un-member", "un-observer", "other")
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Country:
    """One country of the term table: its ISO 3166-1 alpha-2 code, names, adjectives and demonyms."""

    code: str
    names: tuple[str, ...]
    adjectives: tuple[str, ...]
    demonyms: tuple[str, ...]
    status: str

    @property
    def name(self) -> str:
        """The canonical short English name, used to key per-country results."""
        return self.names[0]


@dataclass(frozen=True)
class _Gazetteer:
    """The term table, indexed for matching captions and for resolving country names."""

    countries: dict[str, Country]
    phrases: dict[tuple[str, ...], frozenset[str]]  # words of a term -> countries (empty: none)
    longest: int
    aliases: dict[str, str]  # words of a name or code, joined -> country code
    ambiguous: dict[str, tuple[str, ...]]  # names shared by several countries ("Congo")
    parity_terms: dict[str, tuple[str, ...]]


def _words(text: str) -> list[str]:
    """Words for matching English terms: NFKC, "&" read as "and", casefold, accents removed."""
    folded = unicodedata.normalize("NFKC", text).replace("&", " and ").casefold()
    bare = "".join(ch for ch in unicodedata.normalize("NFD", folded) if unicodedata.category(ch) != "Mn")
    return _WORD.findall(bare)


def _key(text: str) -> str:
    return " ".join(_words(text))


def _term_phrases(country: Country) -> Iterable[tuple[str, ...]]:
    """Every word sequence that names the country; adjectives and demonyms also with a plural -s."""
    for name in country.names:
        yield tuple(_words(name))
    for term in (*country.adjectives, *country.demonyms):
        words = _words(term)
        yield tuple(words)
        yield (*words[:-1], words[-1] + "s")


def _string_list(source: str, entry: str, field: str, value: object, required: bool) -> tuple[str, ...]:
    if value is None and not required:
        return ()
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and _words(v) for v in value):
        raise InputFileError(f"{source}: {entry}: {field} must be a non-empty list of words")
    return tuple(value)


def _parse_countries(source: str, table: object) -> dict[str, Country]:
    if not isinstance(table, dict) or not table:
        raise InputFileError(f"{source}: 'countries' must map ISO 3166-1 alpha-2 codes to entries")
    countries: dict[str, Country] = {}
    for code, entry in table.items():
        if not isinstance(code, str) or not re.fullmatch(r"[A-Z]{2}", code) or not isinstance(entry, dict):
            raise InputFileError(f"{source}: country {code!r} must be a quoted alpha-2 code with a mapping")
        unknown = set(entry) - {"names", "adjectives", "demonyms", "status"}
        status = entry.get("status", "un-member")
        if unknown or status not in _STATUSES:
            raise InputFileError(f"{source}: {code}: unknown field(s) {sorted(unknown)} or status {status!r}")
        countries[code] = Country(
            code=code,
            names=_string_list(source, code, "names", entry.get("names"), required=True),
            adjectives=_string_list(source, code, "adjectives", entry.get("adjectives"), required=True),
            demonyms=_string_list(source, code, "demonyms", entry.get("demonyms"), required=False),
            status=status,
        )
    return countries


def _build(source: str, document: object) -> _Gazetteer:
    """Index a parsed demonyms.yaml; every inconsistency is an error naming the entry."""
    if not isinstance(document, dict):
        raise InputFileError(f"{source}: expected a mapping with countries, not_countries and parity")
    countries = _parse_countries(source, document.get("countries"))
    phrases: dict[tuple[str, ...], set[str]] = {}
    for country in countries.values():
        for phrase in _term_phrases(country):
            phrases.setdefault(phrase, set()).add(country.code)
    blockers = _string_list(source, "not_countries", "the list", document.get("not_countries"), required=True)
    for blocker in blockers:
        words = tuple(_words(blocker))
        if words in phrases:
            raise InputFileError(
                f"{source}: not_countries: {blocker!r} is also a term of {sorted(phrases[words])}"
            )
        phrases[words] = set()

    named: dict[str, set[str]] = {}
    for country in countries.values():
        for alias in (country.code, *country.names):
            named.setdefault(_key(alias), set()).add(country.code)
    try:
        terms = document["parity"]["ravenea"]["terms"]
    except (KeyError, TypeError):
        terms = None
    if not isinstance(terms, dict) or any(_key(name) not in named for name in terms):
        raise InputFileError(f"{source}: parity.ravenea.terms must map known country names to term lists")
    return _Gazetteer(
        countries=countries,
        phrases={words: frozenset(codes) for words, codes in phrases.items()},
        longest=max(len(words) for words in phrases),
        aliases={key: next(iter(codes)) for key, codes in named.items() if len(codes) == 1},
        ambiguous={key: tuple(sorted(codes)) for key, codes in named.items() if len(codes) > 1},
        parity_terms={
            name: _string_list(source, name, "terms", value, True) for name, value in terms.items()
        },
    )


@cache
def _gazetteer() -> _Gazetteer:
    """The packaged term table, read once."""
    source = "m4build/metrics/demonyms.yaml"
    text = resources.files("m4build.metrics").joinpath("demonyms.yaml").read_text(encoding="utf-8")
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputFileError(f"{source} is not valid YAML: {exc}") from exc
    return _build(source, document)


def known_countries() -> list[Country]:
    """Every country RegionScore knows, sorted by code."""
    table = _gazetteer().countries
    return [table[code] for code in sorted(table)]


def _countries_named(words: list[str], gazetteer: _Gazetteer) -> set[str]:
    """Codes of the countries the words name: leftmost-longest phrase matching, no overlaps."""
    found: set[str] = set()
    start = 0
    while start < len(words):
        for size in range(min(gazetteer.longest, len(words) - start), 0, -1):
            codes = gazetteer.phrases.get(tuple(words[start : start + size]))
            if codes is not None:
                found |= codes
                start += size
                break
        else:
            start += 1
    return found


def _did_you_mean(country: str, gazetteer: _Gazetteer) -> str:
    close = difflib.get_close_matches(_key(country), sorted(gazetteer.aliases), n=2, cutoff=0.8)
    names = sorted({gazetteer.countries[gazetteer.aliases[key]].name for key in close})
    return f" (did you mean {' or '.join(names)}?)" if names else ""


def _check_item(
    problems: InputProblems, item_id: str, caption: object, country: object, mode: str, gazetteer: _Gazetteer
) -> str | None:
    """Record what is wrong with one caption; its country code when it can be scored."""
    ok = True
    if is_missing_number(caption) or not isinstance(caption, str):
        problems.add("missing captions", f"{item_id}: {caption!r:.40}")
        ok = False
    elif not caption.strip():
        problems.add("empty captions", item_id)
        ok = False
    if is_missing_number(country) or not isinstance(country, str) or not country.strip():
        problems.add("captions without a country", f"{item_id}: {country!r:.40}")
        return None
    # RAVENEA's code reads the part before "_" ("China_x" is China); so does its mode here.
    key = _key(country.split("_")[0] if mode == "ravenea" else country)
    if key in gazetteer.ambiguous:
        problems.add(
            "ambiguous countries", f"{item_id}: {country!r} (one of {', '.join(gazetteer.ambiguous[key])})"
        )
        return None
    if key not in gazetteer.aliases:
        problems.add("unknown countries", f"{item_id}: {country!r}{_did_you_mean(country, gazetteer)}")
        return None
    return gazetteer.aliases[key] if ok else None


def _mentions(caption: str, country: str, code: str, mode: str, gazetteer: _Gazetteer) -> bool | None:
    """Whether the caption names the country; None when a default-mode caption held only reasoning."""
    if mode == "ravenea":
        name = country.split("_")[0]
        lowered = caption.lower()
        return any(term.lower() in lowered for term in (*gazetteer.parity_terms.get(name, ()), name))
    answer = strip_reasoning(caption)
    if not answer:
        return None
    return code in _countries_named(_words(answer), gazetteer)


def _check_mode(mode: str) -> None:
    if mode not in REGION_MODES:
        raise UsageError(
            f"unknown RegionScore mode {mode!r}", hint="choose one of: " + ", ".join(REGION_MODES)
        )


def mentions_country(caption: str, country: str, *, mode: RegionMode = "default") -> bool:
    """Whether one caption names ``country`` (an English name or alpha-2 code); see the module docstring."""
    _check_mode(mode)
    gazetteer = _gazetteer()
    problems = InputProblems(_WHAT)
    code = _check_item(problems, "the caption", caption, country, mode, gazetteer)
    problems.raise_if_any(_HINT)
    return bool(code and _mentions(caption, country, code, mode, gazetteer))


@dataclass(frozen=True)
class CountryRegionScore:
    """RegionScore of one country's captions."""

    country: str
    code: str
    captions: int
    mentioned: int

    @property
    def score(self) -> float:
        return self.mentioned / self.captions

    def as_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "captions": self.captions,
            "mentioned": self.mentioned,
            "score": self.score,
        }


@dataclass(frozen=True)
class RegionScoreResult:
    """Mean RegionScore over all captions, per country (keyed by canonical name) and per caption.

    ``no_caption`` counts captions that held only reasoning (``default`` mode); they scored 0.
    """

    mode: str
    captions: int
    mentioned: int
    no_caption: int
    per_country: dict[str, CountryRegionScore]
    per_caption: dict[str, bool]

    @property
    def score(self) -> float:
        return self.mentioned / self.captions

    def as_dict(self) -> dict[str, object]:
        return {
            "metric": "region_score",
            "mode": self.mode,
            "score": self.score,
            "captions": self.captions,
            "mentioned": self.mentioned,
            "no_caption": self.no_caption,
            "per_country": {name: result.as_dict() for name, result in self.per_country.items()},
            "per_caption": dict(self.per_caption),
        }


def region_score(
    captions: Mapping[str, str], countries: Mapping[str, str], *, mode: RegionMode = "default"
) -> RegionScoreResult:
    """RegionScore of captions keyed by id, each against the country of its image (same ids).

    Every problem in the input is reported at once in one ``MetricInputError`` before scoring.
    """
    _check_mode(mode)
    check_same_ids(_WHAT, captions.keys(), countries.keys(), _HINT)
    gazetteer = _gazetteer()
    problems = InputProblems(_WHAT)
    if not captions:
        problems.add("captions (none given)", "an empty mapping")
    checked = {
        item_id: _check_item(problems, item_id, captions[item_id], countries[item_id], mode, gazetteer)
        for item_id in sorted(captions)
    }
    problems.raise_if_any(_HINT)
    codes = {item_id: code for item_id, code in checked.items() if code is not None}  # all of them

    per_caption: dict[str, bool] = {}
    tallies: dict[str, list[int]] = {}
    no_caption = 0
    for item_id, code in codes.items():
        mentioned = _mentions(captions[item_id], countries[item_id], code, mode, gazetteer)
        no_caption += mentioned is None
        per_caption[item_id] = bool(mentioned)
        tally = tallies.setdefault(code, [0, 0])
        tally[0] += 1
        tally[1] += bool(mentioned)
    per_country = {
        gazetteer.countries[code].name: CountryRegionScore(gazetteer.countries[code].name, code, total, hits)
        for code, (total, hits) in sorted(tallies.items(), key=lambda item: gazetteer.countries[item[0]].name)
    }
    return RegionScoreResult(
        mode=mode,
        captions=len(per_caption),
        mentioned=sum(per_caption.values()),
        no_caption=no_caption,
        per_country=per_country,
        per_caption=per_caption,
    )
