"""Inter-annotator agreement on nominal labels: Cohen's κ, Fleiss' κ and Krippendorff's α.

RAVENEA's annotators answer yes / no / cannot determine to three questions per (image, article) pair;
before their answers become grades we want to know how far they agree beyond chance. Each measure
compares an observed agreement with the agreement that chance alone would give:

Cohen's κ (Cohen 1960, "A coefficient of agreement for nominal scales"), two raters over the same
N units: ``κ = (p_o − p_e) / (1 − p_e)`` with ``p_o`` the share of units where they agree and
``p_e = Σ_k p_1(k)·p_2(k)`` from each rater's own label distribution. Peer code:
``sklearn.metrics.cohen_kappa_score`` (scikit-learn, ``sklearn/metrics/_classification.py``).

Fleiss' κ (Fleiss 1971, "Measuring nominal scale agreement among many raters"), any number of
raters: per unit ``P_i = Σ_k n_ik(n_ik − 1) / (n_i(n_i − 1))`` (the share of agreeing rater pairs),
``P̄`` their mean, ``p_k`` the share of all ratings in category k and ``P_e = Σ_k p_k²``;
``κ = (P̄ − P_e) / (1 − P_e)``. Fleiss assumes every unit has the same number of ratings n
(statsmodels' ``statsmodels.stats.inter_rater.fleiss_kappa`` reads n from the table and assumes it);
annotation rounds rarely deliver that, so each unit uses its own ``n_i``, which is exactly Fleiss
when all ``n_i`` are equal. Units with fewer than two ratings hold no rater pair and are left out.

Krippendorff's α, nominal (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"):
``α = 1 − D_o / D_e`` from the coincidence matrix ``o_ck = Σ_u (pairs of values c, k in unit u) /
(m_u − 1)``, with ``n_c`` its margins and ``n`` the number of pairable values; for nominal data
``α = 1 − (n − 1)·(n − Σ_c o_cc) / (n² − Σ_c n_c²)``. Units with one value are not pairable and left
out; missing ratings need no special handling. Peer code: the ``krippendorff`` package
(pln-fing-udelar/fast-krippendorff, ``krippendorff/krippendorff.py``), which reproduces the paper's
worked example (α = 0.743).

Where we differ from the peer code: when chance agreement is total (every rating in one category)
all three are 0/0. scikit-learn then returns NaN with a warning and the ``krippendorff`` package
raises; here the value is ``None`` ("undefined"), so a report can say so instead of printing NaN.
Arithmetic is exact (integers and fractions), so "undefined" is decided without float tolerance.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from m4build.metrics.checks import InputProblems

Rating = tuple[Hashable, str, str]
"""One judgement: (unit, rater, label)."""


def _check_labels(rater: str, labels: Iterable[object], problems: InputProblems) -> None:
    for position, label in enumerate(labels):
        if not isinstance(label, str) or not label:
            problems.add("missing labels", f"{rater} rater, position {position}: {label!r}")


def cohen_kappa(first: Sequence[str], second: Sequence[str]) -> float | None:
    """Cohen's κ of two raters who labelled the same units, in the same order.

    Returns ``None`` when κ is undefined (both raters used one and the same label throughout, so
    chance agreement is 1). Computed exactly as ``(N·A − Σ_k a_k·b_k) / (N² − Σ_k a_k·b_k)`` with
    A the agreeing units and a_k, b_k each rater's label counts.
    """
    problems = InputProblems("Cohen's kappa")
    if len(first) != len(second):
        problems.add("rating lists of different lengths", f"{len(first)} vs {len(second)}")
    if not first:
        problems.add("empty rating lists", "no units")
    _check_labels("first", first, problems)
    _check_labels("second", second, problems)
    problems.raise_if_any("Pass one label per unit for each rater, aligned by unit.")
    units = len(first)
    agreed = sum(a == b for a, b in zip(first, second))
    first_counts, second_counts = Counter(first), Counter(second)
    chance = sum(first_counts[label] * second_counts[label] for label in first_counts)
    denominator = units * units - chance
    if denominator == 0:
        return None
    return (units * agreed - chance) / denominator


def _category_counts(units: Iterable[Sequence[str]], what: str) -> list[Counter[str]]:
    """Label counts of every unit with at least two ratings; bad labels raise ``MetricInputError``."""
    problems = InputProblems(what)
    counted = []
    for index, ratings in enumerate(units):
        for label in ratings:
            if not isinstance(label, str) or not label:
                problems.add("missing labels", f"unit {index}: {label!r}")
        if len(ratings) >= 2:
            counted.append(Counter(ratings))
    if not counted and not problems:
        problems.add("no unit with two or more ratings", "agreement needs rater pairs")
    problems.raise_if_any("Give every unit the labels its raters chose; drop missing ratings.")
    return counted


def fleiss_kappa(units: Iterable[Sequence[str]]) -> float | None:
    """Fleiss' κ over units given as the list of labels their raters chose (any number per unit).

    Units with fewer than two ratings are left out. ``None`` when κ is undefined (every rating in
    one category).
    """
    counted = _category_counts(units, "Fleiss' kappa")
    mean_agreement = Fraction(0)
    totals: Counter[str] = Counter()
    for counts in counted:
        raters = sum(counts.values())
        agreeing_pairs = sum(count * (count - 1) for count in counts.values())
        mean_agreement += Fraction(agreeing_pairs, raters * (raters - 1))
        totals.update(counts)
    mean_agreement /= len(counted)
    ratings = sum(totals.values())
    chance = sum(Fraction(count, ratings) ** 2 for count in totals.values())
    if chance == 1:
        return None
    return float((mean_agreement - chance) / (1 - chance))


def krippendorff_alpha_nominal(units: Iterable[Sequence[str]]) -> float | None:
    """Krippendorff's α for nominal labels over units given as the labels their raters chose.

    Units with a single value are not pairable and left out. ``None`` when α is undefined (every
    pairable value is the same, so the expected disagreement is 0).
    """
    counted = _category_counts(units, "Krippendorff's alpha")
    matching = Fraction(0)  # Σ_c o_cc: coincidences of a value with an equal value
    margins: Counter[str] = Counter()
    for counts in counted:
        values = sum(counts.values())
        matching += Fraction(sum(count * (count - 1) for count in counts.values()), values - 1)
        margins.update(counts)
    pairable = sum(margins.values())
    expected = pairable * pairable - sum(count * count for count in margins.values())
    if expected == 0:
        return None
    return float(1 - (pairable - 1) * (pairable - matching) / expected)


@dataclass(frozen=True)
class PairAgreement:
    """Two raters compared on the units they both labelled."""

    first: str
    second: str
    shared_units: int
    agreed_units: int
    kappa: float | None  # None: undefined (no shared unit, or both used one label throughout)

    @property
    def observed_agreement(self) -> float | None:
        return self.agreed_units / self.shared_units if self.shared_units else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "first": self.first,
            "second": self.second,
            "shared_units": self.shared_units,
            "agreed_units": self.agreed_units,
            "observed_agreement": self.observed_agreement,
            "cohen_kappa": self.kappa,
        }


@dataclass(frozen=True)
class Agreement:
    """Agreement of every rater pair and of all raters together over one set of units."""

    units: int  # units with at least one rating
    pairable_units: int  # units with at least two ratings: the ones agreement is measured on
    ratings: int
    raters: tuple[str, ...]
    labels: dict[str, int]  # how often each label was given, over all ratings
    pairs: tuple[PairAgreement, ...]
    fleiss_kappa: float | None
    krippendorff_alpha: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "units": self.units,
            "pairable_units": self.pairable_units,
            "ratings": self.ratings,
            "raters": list(self.raters),
            "labels": dict(self.labels),
            "fleiss_kappa": self.fleiss_kappa,
            "krippendorff_alpha_nominal": self.krippendorff_alpha,
            "pairs": [pair.as_dict() for pair in self.pairs],
        }


def agreement(ratings: Iterable[Rating]) -> Agreement:
    """Cohen's κ per rater pair, Fleiss' κ and Krippendorff's α over (unit, rater, label) triples.

    A rater may skip units; each pair is compared on the units both labelled, and units with fewer
    than two ratings count only in ``units``. A rater who labels the same unit twice is an input
    error (the caller decides which answer stands), as is a missing label.
    """
    by_unit: dict[Hashable, dict[str, str]] = {}
    problems = InputProblems("agreement")
    for unit, rater, label in ratings:
        if not isinstance(label, str) or not label:
            problems.add("missing labels", f"{rater} on {unit!r}: {label!r}")
            continue
        given = by_unit.setdefault(unit, {})
        if rater in given:
            problems.add("units rated twice by one rater", f"{rater} on {unit!r}")
            continue
        given[rater] = label
    problems.raise_if_any("Give one label per rater and unit; resolve duplicates before measuring agreement.")

    raters = tuple(sorted({rater for given in by_unit.values() for rater in given}))
    pairs = tuple(
        _pair_agreement(first, second, by_unit) for first, second in itertools.combinations(raters, 2)
    )
    pairable = [list(given.values()) for given in by_unit.values() if len(given) >= 2]
    labels = Counter(label for given in by_unit.values() for label in given.values())
    return Agreement(
        units=len(by_unit),
        pairable_units=len(pairable),
        ratings=sum(labels.values()),
        raters=raters,
        labels=dict(sorted(labels.items())),
        pairs=pairs,
        fleiss_kappa=fleiss_kappa(pairable) if pairable else None,
        krippendorff_alpha=krippendorff_alpha_nominal(pairable) if pairable else None,
    )


def _pair_agreement(first: str, second: str, by_unit: dict[Hashable, dict[str, str]]) -> PairAgreement:
    shared = [
        (given[first], given[second]) for given in by_unit.values() if first in given and second in given
    ]
    if not shared:
        return PairAgreement(first, second, 0, 0, None)
    first_labels, second_labels = zip(*shared)
    return PairAgreement(
        first=first,
        second=second,
        shared_units=len(shared),
        agreed_units=sum(a == b for a, b in shared),
        kappa=cohen_kappa(first_labels, second_labels),
    )
