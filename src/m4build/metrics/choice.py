"""Multiple-choice accuracy for WorldCuisines-style VQA, from the model's raw text to the macro average.

A multiple-choice score is only as good as the step that reads an option number out of free text, so
this module owns both: :func:`parse_choice` reads one answer and says which rule of the cascade fired
(the runner stores that per prediction), and :func:`score_choices` grades a whole run and reports
accuracy per language, per prompt type, per (prompt type, language), the macro and the micro average,
and how many answers could not be read (an unreadable answer counts as wrong: that is part of the
metric, so it is counted, not raised).

Reference definitions
---------------------
WorldCuisines (Winata et al., 2024; ``worldcuisines/worldcuisines``, ``evaluation/score/score.py``,
``score_mc``) reads the raw prediction with a four-step cascade:

1. ``int(prediction)``;
2. a leading ``N.`` (``re.match(r"^(\\d+)\\.")``);
3. the first integer anywhere (``re.search(r"(\\d+)")``);
4. the prediction with every ``.`` removed, found with ``str.find`` in the whole prompt; the character
   three places before the hit is taken as the option number (``"\\n2. Sushi"`` -> ``"2"``).

It then scores accuracy per (prompt type, language) as a percentage rounded to 2 decimals, averages
the languages of each prompt type (rounded), and averages the prompt types (rounded): that last number
(``avg_score_all``) is the benchmark's **macro** average. M4-RAG (Anugraha et al., 2025;
``davidanugraha/M4-RAG``, ``src/evaluation/eval_wc.py``, ``score_mcq``) reads ``json.loads(response)
["answer"]`` (else the first ``"answer": N`` match) and reports per prompt type, per language and an
"Overall" that is the **micro** average (correct / all). Both are reported here.

Flaws in the reference cascade, reproduced by ``mode="parity"`` and corrected by the default
-------------------------------------------------------------------------------------------------
- It reads raw text: the first integer of a ``<think>`` block or of a JSON ``"explanation"`` wins
  over the answer the model gave last. The default reads :func:`m4build.text.reasoning.final_answer`
  and the JSON ``answer`` field first.
- Step 4 searches the whole prompt, question included, and takes ``prompt[hit - 3]`` blindly: the
  answer ``フラン`` (option 4 of WorldCuisines ``ja_casual`` item 225) is found inside the question's
  ``フランス料理`` and yields the prompt's last character; an option that is a prefix of an earlier
  option (``Wat`` after ``Waterblommetjiebredie``) yields the earlier one; removing every ``.`` from the
  answer breaks options that contain one. The default compares with the option texts themselves
  (normalised), exact match first, and accepts a mentioned option only when exactly one option is named
  once longer options have been taken out, so ``Puto`` is not read inside ``Puto seco``.
- Step 4 stores the option number as a one-character *string* while the gold answer is a number, and
  the pandas comparison never matches: an answer read from option text is never scored correct.
  ``parity`` keeps that (it changes the published numbers); the default scores it.
- Step 3 takes integers that name no option (``2024``, ``7`` of ``7 Up cake`` among five options);
  the default takes the first integer that is a valid option number.
- Step 1 is Python's ``int``, so ``"-1"`` and ``"1_0"`` parse; the default accepts only a bare number,
  optionally bracketed or followed by ``.``/``:``.
- Averages of rounded averages: ``parity`` reproduces the three roundings (and reports the peer's
  percentage divided by 100, e.g. 65.23 -> 0.6523); the default does not round.

M4-RAG's parser has flaws of its own that the default avoids: a bare ``2`` (valid JSON, but not an
object) fails ``.get`` and is scored wrong, and ``{"answer": "2. Sushi"}`` is compared as the string
``"2. Sushi"`` with ``"2"``.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from m4build.metrics.checks import InputProblems, MetricInputError, is_missing_number
from m4build.text.reasoning import final_answer

ScoringMode = Literal["default", "parity"]
_SCORING_MODES: tuple[str, ...] = ("default", "parity")


class ChoiceRule(str, Enum):
    """The step of the answer-parse cascade that read the option number."""

    JSON_NUMBER = "json_number"  # default only: {"answer": 2}
    INTEGER = "integer"  # the whole answer is a number
    NUMBERED = "numbered"  # the answer starts with "N." ("N)" too in the default)
    OPTION_TEXT = "option_text"  # the answer is an option's text (parity: found in the prompt)
    FIRST_INTEGER = "first_integer"  # the first integer (default: the first that names an option)
    OPTION_MENTION = "option_mention"  # default only: the answer names exactly one option


@dataclass(frozen=True)
class ParsedChoice:
    """One answer as the cascade read it.

    ``option`` is the 1-based option number (``None`` when no rule read one); ``rule`` the rule that
    fired (``None``: unparsable); ``answer_text`` the text the cascade read (the final answer after
    reasoning and fences, or the JSON answer field; the raw output in ``parity``). In ``parity`` the
    option-text rule can fire without yielding a number, as the reference's does.
    """

    option: int | None
    rule: ChoiceRule | None
    answer_text: str

    @property
    def parsed(self) -> bool:
        return self.rule is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "option": self.option,
            "rule": self.rule.value if self.rule else None,
            "answer_text": self.answer_text,
        }


@dataclass(frozen=True)
class ChoiceRecord:
    """One prediction to grade.

    ``item_id`` must be unique within a run: WorldCuisines reuses ``qa_id`` across languages, so use
    ``f"{qa_id}-{lang}"`` as M4-RAG does. ``gold_option`` is the 1-based number of the correct option
    as printed in the prompt (WorldCuisines' ``multi_choice_answer``; M4-RAG's ``mcq_answer_index + 1``).
    ``options`` are the option texts in order; without them the default reads them from
    ``prompt_text`` (:func:`options_from_prompt`), and ``parity`` needs ``prompt_text`` for its
    option-text rule.
    """

    item_id: str
    language: str
    prompt_type: str | int
    raw_output: str
    gold_option: int
    options: tuple[str, ...] | None = None
    prompt_text: str | None = None


@dataclass(frozen=True)
class GradedChoice:
    """A prediction after parsing and grading, ready to be stored next to the raw output."""

    item_id: str
    language: str
    prompt_type: str
    parsed: ParsedChoice
    correct: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "item_id": self.item_id,
            "language": self.language,
            "prompt_type": self.prompt_type,
            "parsed_option": self.parsed.option,
            "rule": self.parsed.rule.value if self.parsed.rule else None,
            "correct": self.correct,
        }


@dataclass(frozen=True)
class GroupScore:
    """Counts and accuracy (a fraction) of one group of predictions."""

    n: int
    correct: int
    unparsable: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.n

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "correct": self.correct,
            "unparsable": self.unparsable,
            "accuracy": self.accuracy,
        }


@dataclass(frozen=True)
class ChoiceAccuracy:
    """Multiple-choice accuracy of one run (fractions in [0, 1]; keys sorted).

    ``macro`` is the WorldCuisines average (languages within each prompt type, then prompt types);
    ``micro`` is correct over all predictions (M4-RAG's "Overall"). ``items`` holds every graded
    prediction for the run folder and is left out of :meth:`as_dict`.
    """

    mode: str
    overall: GroupScore
    macro: float
    macro_by_prompt_type: dict[str, float]
    by_language: dict[str, GroupScore]
    by_prompt_type: dict[str, GroupScore]
    by_prompt_type_and_language: dict[str, dict[str, GroupScore]]
    rules: dict[str, int]
    items: tuple[GradedChoice, ...] = field(repr=False)

    @property
    def micro(self) -> float:
        return self.overall.accuracy

    @property
    def n(self) -> int:
        return self.overall.n

    @property
    def unparsable(self) -> int:
        return self.overall.unparsable

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "n": self.n,
            "correct": self.overall.correct,
            "unparsable": self.unparsable,
            "micro": self.micro,
            "macro": self.macro,
            "macro_by_prompt_type": dict(self.macro_by_prompt_type),
            "by_language": {key: group.as_dict() for key, group in self.by_language.items()},
            "by_prompt_type": {key: group.as_dict() for key, group in self.by_prompt_type.items()},
            "by_prompt_type_and_language": {
                prompt_type: {language: group.as_dict() for language, group in groups.items()}
                for prompt_type, groups in self.by_prompt_type_and_language.items()
            },
            "rules": dict(self.rules),
        }


# --- reading the options -------------------------------------------------------------------------

_OPTION_LINE = re.compile(r"^[ \t]*(\d+)\.[ \t]+(.*?)[ \t]*$", re.MULTILINE)


def options_from_prompt(prompt_text: str) -> tuple[str, ...]:
    """The options printed in a multiple-choice prompt as ``N. text`` lines, option 1 first.

    Only a run numbered 1, 2, 3, ... counts (the last such run if there are several), so a numbered
    line in the question does not shift the options. WorldCuisines prompts end with "answer id
    (1,2,3,4,5)" even where only four options are printed; the lines, not that sentence, decide.
    """
    options: list[str] = []
    for match in _OPTION_LINE.finditer(prompt_text):
        number = int(match.group(1))
        if number == 1:
            options = [match.group(2)]
        elif number == len(options) + 1:
            options.append(match.group(2))
    return tuple(options)


# --- the corrected cascade (default) -------------------------------------------------------------

_DECORATION = " \t\r\n*_\"'`“”‘’"
_EDGE_NOISE = _DECORATION + ".,;:!?()[]{}「」『』【】。、，：！？«»"
_BARE_NUMBER = re.compile(r"[(\[]?(\d+)[)\]]?[.:]?")
_LEADING_NUMBER = re.compile(r"(\d+)[.)](?!\d)")
_ANY_NUMBER = re.compile(r"\d+")
_ANSWER_FIELD = re.compile(r'"answer"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?)', re.IGNORECASE)
# Longer digit runs are never option numbers (and int() refuses runs over 4300 digits).
_MAX_OPTION_DIGITS = 6
_NOT_JSON = object()


def _normalized(text: str) -> str:
    """Compare option texts case-, width- and spacing-blind, ignoring surrounding punctuation."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(folded.split()).strip(_EDGE_NOISE)


def _option_number(digits: str) -> int | None:
    return int(digits) if len(digits) <= _MAX_OPTION_DIGITS else None


def _unparsable(text: str) -> ParsedChoice:
    return ParsedChoice(None, None, text)


def _json_answer(text: str) -> object:
    """The ``answer`` field's value when the model wrote JSON, ``_NOT_JSON`` when it did not.

    ``None`` means JSON without a usable answer: an object lacking the field, or a truncated object
    (text starting with ``{``) in which no ``"answer": value`` pair can be found.
    """
    try:
        decoded = json.loads(text)
    except ValueError:
        fields = _ANSWER_FIELD.findall(text)
        if not fields:
            return None if text.startswith("{") else _NOT_JSON
        try:
            return json.loads(fields[-1])
        except ValueError:
            return None
    if not isinstance(decoded, dict):
        return _NOT_JSON
    return next((value for key, value in decoded.items() if key.strip().casefold() == "answer"), None)


def _options_equal_to(answer: str, options: Sequence[str]) -> list[int]:
    wanted = _normalized(answer)
    return [number for number, text in enumerate(options, start=1) if wanted and _normalized(text) == wanted]


def _options_mentioned(answer: str, options: Sequence[str]) -> set[int]:
    """Options whose text occurs in the answer, longest texts first, each hit blanked once found.

    Blanking makes ``Puto seco`` hide the ``Puto`` inside it; two options with the same text are both
    named, so the answer stays ambiguous.
    """
    numbers_by_text: dict[str, list[int]] = defaultdict(list)
    for number, text in enumerate(options, start=1):
        if _normalized(text):
            numbers_by_text[_normalized(text)].append(number)
    remaining = _normalized(answer)
    named: set[int] = set()
    for text in sorted(numbers_by_text, key=lambda option: (-len(option), option)):
        if text in remaining:
            named.update(numbers_by_text[text])
            remaining = remaining.replace(text, "\x00")
    return named


def _read_answer(text: str, options: Sequence[str]) -> ParsedChoice:
    """The corrected cascade on an answer with reasoning, fences and JSON already taken off."""
    answer = text.strip(_DECORATION)
    bare = _BARE_NUMBER.fullmatch(answer)
    if bare and _option_number(bare.group(1)) is not None:
        return ParsedChoice(_option_number(bare.group(1)), ChoiceRule.INTEGER, answer)
    leading = _LEADING_NUMBER.match(answer)
    if leading and _option_number(leading.group(1)) is not None:
        return ParsedChoice(_option_number(leading.group(1)), ChoiceRule.NUMBERED, answer)
    exact = _options_equal_to(answer, options)
    if len(exact) == 1:
        return ParsedChoice(exact[0], ChoiceRule.OPTION_TEXT, answer)
    for match in _ANY_NUMBER.finditer(answer):
        number = _option_number(match.group(0))
        if number is not None and (not options or 1 <= number <= len(options)):
            return ParsedChoice(number, ChoiceRule.FIRST_INTEGER, answer)
    mentioned = _options_mentioned(answer, options)
    if len(mentioned) == 1:
        return ParsedChoice(mentioned.pop(), ChoiceRule.OPTION_MENTION, answer)
    return _unparsable(answer)


def _parse_corrected(raw_output: str, options: Sequence[str]) -> ParsedChoice:
    text = final_answer(raw_output)
    value = _json_answer(text)
    if value is _NOT_JSON:
        return _read_answer(text, options)
    if isinstance(value, str):
        return _read_answer(value, options)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _unparsable(text)
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return _unparsable(text)
    return ParsedChoice(int(value), ChoiceRule.JSON_NUMBER, str(value))


# --- the reference cascade (parity) --------------------------------------------------------------

_PEER_LEADING_NUMBER = re.compile(r"^(\d+)\.")
_PEER_ANY_NUMBER = re.compile(r"(\d+)")


def _parse_like_worldcuisines(raw_output: str, prompt_text: str | None) -> ParsedChoice:
    """WorldCuisines ``score_mc``'s cascade, step for step, on the raw output (see the module notes).

    Each step's ``int()`` may raise ``ValueError`` (a digit run over Python's 4300-digit limit) and
    then, as in the reference, the next step runs.
    """
    try:
        return ParsedChoice(int(raw_output), ChoiceRule.INTEGER, raw_output)
    except ValueError:
        pass
    for rule, match in (
        (ChoiceRule.NUMBERED, _PEER_LEADING_NUMBER.match(raw_output)),
        (ChoiceRule.FIRST_INTEGER, _PEER_ANY_NUMBER.search(raw_output)),
    ):
        if match:
            try:
                return ParsedChoice(int(match.group(1)), rule, raw_output)
            except ValueError:
                pass
    if prompt_text is None:
        return _unparsable(raw_output)
    found = prompt_text.find(raw_output.replace(".", ""))
    if found == -1 or found - 3 < -len(prompt_text):
        return _unparsable(raw_output)
    marker = prompt_text[found - 3]
    return ParsedChoice(int(marker) if marker.isdecimal() else None, ChoiceRule.OPTION_TEXT, raw_output)


# --- parsing and grading -------------------------------------------------------------------------


def _check_mode(mode: str) -> None:
    if mode not in _SCORING_MODES:
        raise MetricInputError(
            f"Unknown multiple-choice scoring mode {mode!r}.",
            "Use 'default' (corrected parsing) or 'parity' (the WorldCuisines scorer's behaviour).",
        )


def parse_choice(
    raw_output: str,
    *,
    options: Sequence[str] | None = None,
    prompt_text: str | None = None,
    mode: ScoringMode = "default",
) -> ParsedChoice:
    """Read the option number a model chose from its raw output, and say which rule read it.

    The default handles reasoning blocks, code fences and JSON (``{"answer": 2}``,
    ``{"answer": "2. Sushi"}``), then runs the corrected cascade: bare number, leading ``N.``/``N)``,
    exact option text, first integer naming an option, a single mentioned option. ``options`` default
    to those printed in ``prompt_text``. ``parity`` runs the WorldCuisines cascade on the raw output.
    """
    _check_mode(mode)
    if mode == "parity":
        return _parse_like_worldcuisines(raw_output, prompt_text)
    if options is None:
        options = options_from_prompt(prompt_text) if prompt_text is not None else ()
    return _parse_corrected(raw_output, options)


def _is_correct(parsed: ParsedChoice, gold_option: int, mode: ScoringMode) -> bool:
    if parsed.option is None:
        return False
    # The reference stores option-text hits as strings and compares them with numbers: never equal.
    if mode == "parity" and parsed.rule is ChoiceRule.OPTION_TEXT:
        return False
    return parsed.option == gold_option


def grade_choice(record: ChoiceRecord, *, mode: ScoringMode = "default") -> GradedChoice:
    """Parse one prediction and grade it against its gold option (no input checks: see score_choices)."""
    parsed = parse_choice(
        record.raw_output, options=record.options, prompt_text=record.prompt_text, mode=mode
    )
    return GradedChoice(
        item_id=record.item_id,
        language=record.language,
        prompt_type=str(record.prompt_type),
        parsed=parsed,
        correct=_is_correct(parsed, record.gold_option, mode),
    )


# --- input checks --------------------------------------------------------------------------------

_RECORDS_HINT = (
    "Give every prediction a unique item id (e.g. '{qa_id}-{lang}', as M4-RAG does), its language and "
    "prompt type, the model's raw text, and the 1-based number of the correct option."
)


def _is_text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _option_count(record: ChoiceRecord) -> int | None:
    if record.options is not None:
        return len(record.options)
    if isinstance(record.prompt_text, str):
        return len(options_from_prompt(record.prompt_text)) or None
    return None


def _check_record(record: ChoiceRecord, languages: Collection[str] | None, problems: InputProblems) -> None:
    where = repr(record.item_id)
    if not _is_text(record.language):
        problems.add("records without a language", where)
    elif languages is not None and record.language not in languages:
        problems.add("unknown languages", f"{record.language!r} in {where}")
    prompt_type = record.prompt_type
    if not (_is_text(prompt_type) or (isinstance(prompt_type, int) and not isinstance(prompt_type, bool))):
        problems.add("records without a prompt type", where)
    if is_missing_number(record.raw_output):
        problems.add("missing model outputs", where)
    elif not isinstance(record.raw_output, str):
        problems.add("model outputs that are not text", where)
    options = record.options
    if options is not None and (
        isinstance(options, str) or not options or not all(isinstance(option, str) for option in options)
    ):
        problems.add("option lists that are empty or not sequences of text", where)
        return
    gold, count = record.gold_option, _option_count(record)
    if not isinstance(gold, int) or isinstance(gold, bool):
        problems.add("gold options that are not integers", f"{where}: {gold!r}")
    elif gold < 1 or (count is not None and gold > count):
        problems.add("gold options out of range", f"{where}: {gold} of {count or '?'} options")


def _check_records(records: Sequence[ChoiceRecord], languages: Collection[str] | None) -> None:
    if not records:
        raise MetricInputError("Cannot score multiple-choice predictions: none were given.", _RECORDS_HINT)
    problems = InputProblems("multiple-choice predictions")
    for record in records:
        if not _is_text(record.item_id):
            problems.add("records without an item id", repr(record.item_id))
        _check_record(record, languages, problems)
    counts = Counter(record.item_id for record in records if _is_text(record.item_id))
    for item_id in sorted(item_id for item_id, count in counts.items() if count > 1):
        problems.add("duplicate item ids", f"{item_id!r} ({counts[item_id]} times)")
    problems.raise_if_any(_RECORDS_HINT)


# --- aggregation ---------------------------------------------------------------------------------


def _group_score(items: Sequence[GradedChoice]) -> GroupScore:
    return GroupScore(
        n=len(items),
        correct=sum(item.correct for item in items),
        unparsable=sum(not item.parsed.parsed for item in items),
    )


def _grouped(items: Iterable[GradedChoice], key: str) -> dict[str, list[GradedChoice]]:
    groups: dict[str, list[GradedChoice]] = defaultdict(list)
    for item in items:
        groups[getattr(item, key)].append(item)
    return {name: groups[name] for name in sorted(groups)}


def _macro(table: dict[str, dict[str, GroupScore]], mode: ScoringMode) -> tuple[dict[str, float], float]:
    """Mean over languages within each prompt type, then mean over prompt types.

    ``parity`` repeats the reference's arithmetic: percentages rounded to 2 decimals at each of the
    three levels, summed in order; the result is returned as a fraction (65.23 -> 0.6523).
    """
    if mode == "parity":
        by_type = {}
        for prompt_type, groups in table.items():
            percents = [round(group.accuracy * 100, 2) for group in groups.values()]
            by_type[prompt_type] = round(sum(percents) / len(percents), 2)
        overall = round(sum(by_type.values()) / len(by_type), 2)
        return {key: round(value / 100, 4) for key, value in by_type.items()}, round(overall / 100, 4)
    by_type = {
        prompt_type: math.fsum(group.accuracy for group in groups.values()) / len(groups)
        for prompt_type, groups in table.items()
    }
    return by_type, math.fsum(by_type.values()) / len(by_type)


def score_choices(
    records: Iterable[ChoiceRecord],
    *,
    mode: ScoringMode = "default",
    languages: Collection[str] | None = None,
) -> ChoiceAccuracy:
    """Grade a run of multiple-choice predictions and aggregate it.

    Bad input (no records, duplicate or empty ids, missing outputs, gold options that are not valid
    option numbers, languages outside ``languages`` when given) raises ``MetricInputError`` naming
    the rows; unreadable answers are scored wrong and counted in ``unparsable``.
    """
    _check_mode(mode)
    records = tuple(records)
    _check_records(records, languages)
    items = tuple(grade_choice(record, mode=mode) for record in records)
    table = {
        prompt_type: {
            language: _group_score(group) for language, group in _grouped(members, "language").items()
        }
        for prompt_type, members in _grouped(items, "prompt_type").items()
    }
    macro_by_prompt_type, macro = _macro(table, mode)
    rules = Counter(item.parsed.rule.value for item in items if item.parsed.rule is not None)
    return ChoiceAccuracy(
        mode=mode,
        overall=_group_score(items),
        macro=macro,
        macro_by_prompt_type=macro_by_prompt_type,
        by_language={key: _group_score(group) for key, group in _grouped(items, "language").items()},
        by_prompt_type={key: _group_score(group) for key, group in _grouped(items, "prompt_type").items()},
        by_prompt_type_and_language=table,
        rules=dict(sorted(rules.items())),
        items=items,
    )
