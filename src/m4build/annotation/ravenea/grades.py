"""From several annotators' answers to one culture-relevance grade per (image, article) pair.

RAVENEA's grade adds one point per question answered yes, takes one away per no and counts 0 for
"cannot be determined", so it runs from -3 (unrelated on all three counts) to 3. With several
annotators each question is first resolved on its own, by majority:

- the answer given by strictly more annotators than any other wins;
- a tie between the most frequent answers (yes 1 / no 1, or yes 2 / no 2 / cannot 1, or one of
  each) resolves to ``cannot_determine``: the annotators' evidence for and against is balanced, so
  the question adds 0 points rather than whichever side a rule (or the input order) happened to
  favour. The pair is marked ``tie`` and the question listed in ``tied_questions``, so the tied
  pairs can be sent to an adjudicator.

Resolving each question before adding keeps the grade on RAVENEA's integer scale; averaging the
annotators' grades instead would produce fractions the evaluation (gain 2^(g+3) − 1) was not made for.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from m4build.annotation.ravenea.schema import ANSWER_POINTS, CANNOT_DETERMINE, JUDGMENT_SCHEMA, QUESTIONS


def majority(answers: Sequence[str]) -> tuple[str, bool]:
    """The answer most annotators gave and whether a tie sent it to ``cannot_determine`` instead."""
    ranked = Counter(answers).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return CANNOT_DETERMINE, True
    return ranked[0][0], False


def culture_relevance(answers: Mapping[str, str]) -> int:
    """RAVENEA's grade in [-3, 3]: +1 per yes, -1 per no, 0 per cannot_determine."""
    return sum(ANSWER_POINTS[answers[question]] for question in QUESTIONS)


@dataclass(frozen=True)
class ResolvedPair:
    """The resolved answers and grade of one (image, article) pair."""

    file_name: str
    enwiki_id: int
    answers: Mapping[str, str]
    annotators: tuple[str, ...]
    tied_questions: tuple[str, ...]

    @property
    def grade(self) -> int:
        return culture_relevance(self.answers)


def resolve(labels: Iterable[Mapping[str, Any]]) -> list[ResolvedPair]:
    """One resolved pair per (file_name, enwiki_id) from label rows (one per annotator and question).

    Each annotator must have one answer per question of a pair (the importer guarantees it); pairs
    come out sorted by file name and article id.
    """
    votes: dict[tuple[str, int], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    annotators: dict[tuple[str, int], set[str]] = defaultdict(set)
    for row in labels:
        pair = (row["file_name"], int(row["enwiki_id"]))
        votes[pair][row["question"]].append(row["answer"])
        annotators[pair].add(row["annotator"])
    resolved = []
    for pair in sorted(votes):
        answers, tied = {}, []
        for question in QUESTIONS:
            answers[question], tie = majority(votes[pair][question])
            if tie:
                tied.append(question)
        resolved.append(ResolvedPair(pair[0], pair[1], answers, tuple(sorted(annotators[pair])), tuple(tied)))
    return resolved


def judgments_table(pairs: Sequence[ResolvedPair]) -> pa.Table:
    """``RUN/annotations/judgments.parquet``: resolved answers, grade, annotators and ties per pair."""
    return pa.Table.from_pylist(
        [
            {
                "file_name": pair.file_name,
                "enwiki_id": pair.enwiki_id,
                **{question: pair.answers[question] for question in QUESTIONS},
                "culture_relevance": pair.grade,
                "annotator_count": len(pair.annotators),
                "tie": bool(pair.tied_questions),
                "tied_questions": list(pair.tied_questions),
                "annotators": list(pair.annotators),
            }
            for pair in pairs
        ],
        schema=JUDGMENT_SCHEMA,
    )
