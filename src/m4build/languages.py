"""The languages, dialects and registers of the M4-RAG benchmarks, and the wiki that serves each.

Everything language-specific downstream (which Wikipedia to search, which script to expect, which
LanguageConverter variant to request, how a CVQA ``Subset`` maps to a language) reads one table,
``corpora/languages.yaml``, through this module, so that adding a language is a data change and
``--lang`` means the same thing in every command.

Codes follow the benchmarks: WorldCuisines' own codes (``jv_krama``, ``nan_spoken``) and CVQA
subsets as ``{iso639}_{country}`` (``es_mx``). A selection may also name a base language
(``jv``, ``es``), which stands for all of its registers or country subsets in that benchmark.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path

import yaml

from m4build.errors import InputFileError, UsageError
from m4build.resources import data_path
from m4build.wikis import dbname as wiki_dbname


@dataclass(frozen=True)
class Language:
    """One benchmark language, dialect, register or CVQA language-country subset."""

    code: str
    name: str
    benchmarks: tuple[str, ...]
    wiki: str
    bcp47: str
    script: str
    resource_class: int
    family: str | None = None
    register: str | None = None
    variant: str | None = None
    country: str | None = None
    cvqa_subset: tuple[str, str] | None = None
    note: str | None = None

    @property
    def dbname(self) -> str:
        """The wiki's database name (``"zh_yuewiki"``), the form records and dumps carry."""
        return wiki_dbname(self.wiki)

    @property
    def base(self) -> str:
        """The ISO 639 part of the code (``"es"`` for ``es_mx``), used to expand ``--lang es``."""
        return self.code.split("_", 1)[0]


_REQUIRED = ("code", "name", "benchmarks", "wiki", "bcp47", "script", "resource_class")
_FIELDS = tuple(f.name for f in fields(Language))
_CODE = re.compile(r"^[a-z]{2,3}(_[a-z]+)*$")
# A Wikipedia subdomain ("zh-min-nan"), not a database name ("zh_min_nanwiki") or a URL.
_WIKI = re.compile(r"^[a-z]{2,3}(-[a-z]+)*$")
_BCP47 = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
_SCRIPT = re.compile(r"^[A-Z][a-z]{3}$")
_COUNTRY = re.compile(r"^[A-Z]{2}$")


def _normalise(code: str) -> str:
    """Users type ``zh-CN``, ``ZH_cn`` or `` zh_cn``; all mean the registry key ``zh_cn``."""
    return code.strip().lower().replace("-", "_")


def _subset_key(text: str) -> str:
    """CVQA writes ``Egyptian_Arabic``; compare subset names ignoring case, ``_`` and spacing."""
    return " ".join(text.replace("_", " ").split()).casefold()


class LanguageRegistry:
    """Lookups over the validated language table; built by :func:`load_languages`."""

    def __init__(self, languages: Sequence[Language], benchmarks: Sequence[str]):
        self._by_code = {lang.code: lang for lang in sorted(languages, key=lambda lang: lang.code)}
        self._benchmarks = tuple(benchmarks)
        self._by_subset = {
            (_subset_key(lang.cvqa_subset[0]), _subset_key(lang.cvqa_subset[1])): lang
            for lang in self._by_code.values()
            if lang.cvqa_subset is not None
        }

    @property
    def benchmarks(self) -> tuple[str, ...]:
        """The benchmarks the table covers, in the order the YAML declares them."""
        return self._benchmarks

    def all(self, benchmark: str | None = None) -> list[Language]:
        """Every language, or those of one benchmark, sorted by code."""
        if benchmark is None:
            return list(self._by_code.values())
        self._check_benchmark(benchmark)
        return [lang for lang in self._by_code.values() if benchmark in lang.benchmarks]

    def get(self, code: str) -> Language:
        """The language with this code (case and ``-``/``_`` insensitive)."""
        found = self._by_code.get(_normalise(code))
        if found is None:
            raise UsageError(
                f"unknown language code {code!r}{_did_you_mean(_normalise(code), self._by_code)}",
                hint="valid codes: " + ", ".join(self._by_code),
            )
        return found

    def resolve(self, benchmark: str, selection: str | Sequence[str]) -> list[Language]:
        """Turn a ``--lang`` value into languages of ``benchmark``, sorted by code, no duplicates.

        ``selection`` is ``"all"``, a comma-separated string or a list. Each item is a code of
        the benchmark (``jv_krama``) or a base language (``jv``), which expands to every entry of
        the benchmark that shares it; an exact code wins over a base of the same spelling.
        """
        pool = self.all(benchmark)
        raw_items = selection.split(",") if isinstance(selection, str) else list(selection)
        for item in raw_items:
            if not isinstance(item, str):
                raise UsageError(
                    f"language selections must be strings, got {item!r}",
                    hint="quote codes such as 'no' in YAML recipes: YAML reads a bare no as false",
                )
        items = [_normalise(item) for item in raw_items if item.strip()]
        if not items:
            raise UsageError(f"no {benchmark} language selected", hint=self._choices(benchmark))
        by_code = {lang.code: lang for lang in pool}
        chosen: dict[str, Language] = {}
        for item in items:
            if item == "all":
                matches = pool
            elif item in by_code:
                matches = [by_code[item]]
            else:
                matches = [lang for lang in pool if lang.base == item]
            if not matches:
                raise UsageError(self._unknown(benchmark, item, pool), hint=self._choices(benchmark))
            chosen.update((lang.code, lang) for lang in matches)
        return sorted(chosen.values(), key=lambda lang: lang.code)

    def by_cvqa_subset(self, language: str, country: str) -> Language:
        """The entry for a parsed CVQA ``Subset`` such as ``("Spanish", "Mexico")``."""
        found = self._by_subset.get((_subset_key(language), _subset_key(country)))
        if found is None:
            known = ", ".join(
                f"({lang.cvqa_subset[0]}, {lang.cvqa_subset[1]})"
                for lang in self._by_code.values()
                if lang.cvqa_subset is not None
            )
            raise UsageError(
                f"unknown CVQA subset ({language!r}, {country!r})",
                hint=f"known subsets: {known}. A new CVQA subset needs an entry in corpora/languages.yaml.",
            )
        return found

    def _check_benchmark(self, benchmark: str) -> None:
        if benchmark not in self._benchmarks:
            raise UsageError(
                f"unknown benchmark {benchmark!r}",
                hint="choose one of: " + ", ".join(sorted(self._benchmarks)),
            )

    def _unknown(self, benchmark: str, item: str, pool: Sequence[Language]) -> str:
        """Name the bad code, and say so when it belongs to another benchmark."""
        message = f"unknown {benchmark} language {item!r}"
        elsewhere = sorted(
            {b for lang in self._by_code.values() if item in (lang.code, lang.base) for b in lang.benchmarks}
        )
        if elsewhere:
            return f"{message}: it is a {' and '.join(elsewhere)} language, not a {benchmark} one"
        names = {lang.code for lang in pool} | {lang.base for lang in pool}
        return message + _did_you_mean(item, names)

    def _choices(self, benchmark: str) -> str:
        """The valid values of ``--lang`` for a benchmark, on one line."""
        pool = self.all(benchmark)
        counts: dict[str, int] = {}
        for lang in pool:
            counts[lang.base] = counts.get(lang.base, 0) + 1
        grouped = [f"{base} ({n})" for base, n in sorted(counts.items()) if n > 1]
        text = f"valid {benchmark} codes: " + ", ".join(lang.code for lang in pool)
        if grouped:
            text += "; base languages covering several codes: " + ", ".join(grouped)
        return text + "; or 'all'"


def _did_you_mean(item: str, names: Iterable[str]) -> str:
    """A hint for typos such as ``es_mex``: the closest valid names, if any are close."""
    close = difflib.get_close_matches(item, sorted(names), n=3)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


@cache
def load_languages(path: Path | None = None) -> LanguageRegistry:
    """Read and validate the language table; the packaged ``corpora/languages.yaml`` by default.

    Cached, because every command and pipeline step asks for it and the file does not change
    during a run.
    """
    source = path if path is not None else data_path("corpora", "languages.yaml")
    try:
        document = yaml.safe_load(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputFileError(f"cannot read the language table {source}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise InputFileError(f"{source}{where} is not valid YAML: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("languages"), list):
        raise InputFileError(f"{source}: expected a mapping with a 'languages' list")
    benchmarks = document.get("benchmarks")
    if not isinstance(benchmarks, list) or not benchmarks or not all(isinstance(b, str) for b in benchmarks):
        raise InputFileError(f"{source}: expected 'benchmarks' to be a non-empty list of names")

    languages: list[Language] = []
    seen_codes: set[str] = set()
    seen_subsets: dict[tuple[str, str], str] = {}
    for index, entry in enumerate(document["languages"], start=1):
        language = _parse_entry(source, index, entry, tuple(benchmarks))
        if language.code in seen_codes:
            raise InputFileError(f"{source}: language {language.code!r} is listed twice")
        seen_codes.add(language.code)
        if language.cvqa_subset is not None:
            key = (_subset_key(language.cvqa_subset[0]), _subset_key(language.cvqa_subset[1]))
            if key in seen_subsets:
                raise InputFileError(
                    f"{source}: languages {seen_subsets[key]!r} and {language.code!r} claim the same "
                    f"CVQA subset {list(language.cvqa_subset)}"
                )
            seen_subsets[key] = language.code
        languages.append(language)
    return LanguageRegistry(languages, benchmarks)


def _parse_entry(source: Path, index: int, entry: object, benchmarks: tuple[str, ...]) -> Language:
    """Check one YAML entry and build its :class:`Language`; errors name the entry."""
    if not isinstance(entry, dict):
        raise InputFileError(f"{source}: entry {index} of 'languages' is not a mapping")
    label = f"entry {index}" + (f" ({entry['code']!r})" if isinstance(entry.get("code"), str) else "")

    def fail(problem: str) -> InputFileError:
        return InputFileError(f"{source}: language {label}: {problem}")

    unknown = sorted(set(entry) - set(_FIELDS), key=str)
    if unknown:
        raise fail(f"unknown field(s) {', '.join(map(str, unknown))}; allowed: {', '.join(_FIELDS)}")
    missing = [name for name in _REQUIRED if entry.get(name) is None]
    if missing:
        raise fail(f"missing field(s) {', '.join(missing)}")
    for name in _FIELDS:
        value = entry.get(name)
        if name in ("benchmarks", "cvqa_subset", "resource_class") or value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            hint = ""
            if isinstance(value, bool):
                hint = " (quote it: YAML reads bare no/yes/on/off as booleans)"
            raise fail(f"field {name!r} must be a non-empty string, got {value!r}{hint}")

    code, wiki, bcp47, script = entry["code"], entry["wiki"], entry["bcp47"], entry["script"]
    if not _CODE.match(code):
        raise fail("code must be lower-case ISO 639 letters with '_'-separated parts, e.g. 'jv_krama'")
    if code == "all":
        raise fail("'all' is reserved for selecting every language")
    if not _WIKI.match(wiki):
        raise fail(f"wiki {wiki!r} must be a Wikipedia subdomain such as 'zh-yue' (not 'zh_yuewiki')")
    base = code.split("_")[0]
    if not _BCP47.match(bcp47) or bcp47.split("-")[0] != base:
        raise fail(f"bcp47 {bcp47!r} must be a BCP-47 tag whose language subtag is {base!r}")
    if not _SCRIPT.match(script):
        raise fail(f"script {script!r} must be an ISO 15924 code such as 'Latn'")
    tag_scripts = [part for part in bcp47.split("-")[1:] if len(part) == 4 and part.isalpha()]
    if tag_scripts and tag_scripts != [script]:
        raise fail(f"bcp47 {bcp47!r} names script {tag_scripts[0]!r} but script is {script!r}")

    resource_class = entry["resource_class"]
    if type(resource_class) is not int or not 0 <= resource_class <= 5:  # bool is an int subclass
        raise fail(f"resource_class must be a Joshi et al. class from 0 to 5, got {resource_class!r}")

    entry_benchmarks = entry["benchmarks"]
    if (
        not isinstance(entry_benchmarks, list)
        or not entry_benchmarks
        or any(not isinstance(b, str) or b not in benchmarks for b in entry_benchmarks)
        or len(set(entry_benchmarks)) != len(entry_benchmarks)
    ):
        raise fail(f"benchmarks must be a non-empty list drawn from {', '.join(benchmarks)}")

    variant = entry.get("variant")
    if variant is not None and not variant.startswith(wiki + "-"):
        raise fail(f"variant {variant!r} must be a variant of wiki {wiki!r}, e.g. '{wiki}-xx'")

    country = entry.get("country")
    if country is not None and not _COUNTRY.match(country):
        raise fail(f"country {country!r} must be an upper-case ISO 3166-1 alpha-2 code")
    subset = entry.get("cvqa_subset")
    if subset is not None:
        is_pair = isinstance(subset, list) and len(subset) == 2
        if not is_pair or not all(isinstance(part, str) and part for part in subset):
            raise fail("cvqa_subset must be a [language, country] pair of strings")
        if "cvqa" not in entry_benchmarks:
            raise fail("cvqa_subset is set but 'cvqa' is not among its benchmarks")
        if country is None or not code.endswith("_" + country.lower()):
            raise fail("a CVQA subset needs a country, and its code must end in _{country}, e.g. 'es_mx'")
    elif "cvqa" in entry_benchmarks:
        raise fail("a cvqa language needs its cvqa_subset [language, country]")

    return Language(
        code=code,
        name=entry["name"],
        benchmarks=tuple(entry_benchmarks),
        wiki=wiki,
        bcp47=bcp47,
        script=script,
        resource_class=resource_class,
        family=entry.get("family"),
        register=entry.get("register"),
        variant=variant,
        country=country,
        cvqa_subset=(subset[0], subset[1]) if subset is not None else None,
        note=entry.get("note"),
    )
