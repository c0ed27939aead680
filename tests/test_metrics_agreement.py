"""Inter-annotator agreement: Cohen's κ, Fleiss' κ and Krippendorff's α on worked examples.

Hand-computed cases, the published worked examples (Fleiss' 10 x 14 table as Wikipedia's "Fleiss'
kappa" article lays it out; Krippendorff 2011's four-observer reliability data), and comparisons with
the peer implementations where installed: scikit-learn's ``cohen_kappa_score`` and the ``krippendorff``
package's ``alpha``.
"""

from __future__ import annotations

import random

import pytest

from m4build.metrics.agreement import agreement, cohen_kappa, fleiss_kappa, krippendorff_alpha_nominal
from m4build.metrics.checks import MetricInputError

# --- Cohen's kappa ----------------------------------------------------------------------------------

# Ten units, two raters. They agree on units 1-5, 8, 9: A = 7, p_o = 0.7.
# First: 7 yes, 3 no; second: 6 yes, 4 no. p_e = (7*6 + 3*4) / 100 = 0.54.
# kappa = (0.7 - 0.54) / (1 - 0.54) = 0.16 / 0.46 = 8/23.
FIRST = ["yes"] * 7 + ["no"] * 3
SECOND = ["yes"] * 5 + ["no", "no", "no", "no", "yes"]


def test_cohen_kappa_worked_example() -> None:
    assert cohen_kappa(FIRST, SECOND) == pytest.approx(8 / 23)


def test_cohen_kappa_perfect_agreement_and_perfect_disagreement() -> None:
    assert cohen_kappa(["yes", "no", "yes"], ["yes", "no", "yes"]) == 1.0
    # p_o = 0; each rater 2 yes, 2 no: p_e = (2*2 + 2*2) / 16 = 0.5; kappa = (0 - 0.5) / 0.5 = -1.
    assert cohen_kappa(["yes", "no", "yes", "no"], ["no", "yes", "no", "yes"]) == -1.0


def test_cohen_kappa_is_undefined_when_both_raters_use_one_label_throughout() -> None:
    # p_o = p_e = 1: 0/0. scikit-learn returns NaN with a warning; we say "undefined".
    assert cohen_kappa(["yes"] * 4, ["yes"] * 4) is None


def test_cohen_kappa_matches_scikit_learn() -> None:
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = random.Random(7)
    labels = ["yes", "no", "cannot_determine"]
    for _ in range(20):
        size = rng.randint(2, 60)
        first = [rng.choice(labels) for _ in range(size)]
        second = [label if rng.random() < 0.6 else rng.choice(labels) for label in first]
        ours = cohen_kappa(first, second)
        if ours is None:
            continue
        assert ours == pytest.approx(sklearn_metrics.cohen_kappa_score(first, second), abs=1e-12)
    assert cohen_kappa(FIRST, SECOND) == pytest.approx(sklearn_metrics.cohen_kappa_score(FIRST, SECOND))


def test_cohen_kappa_refuses_unaligned_or_missing_labels() -> None:
    with pytest.raises(MetricInputError, match="rating lists of different lengths"):
        cohen_kappa(["yes", "no"], ["yes"])
    with pytest.raises(MetricInputError, match="empty rating lists"):
        cohen_kappa([], [])
    with pytest.raises(MetricInputError, match="missing labels"):
        cohen_kappa(["yes", None], ["yes", "no"])  # type: ignore[list-item]


# --- Fleiss' kappa ----------------------------------------------------------------------------------

# Fleiss' worked example: 10 units, 14 raters each, 5 categories (counts per unit and category).
FLEISS_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def units_from_table(table: list[list[int]]) -> list[list[str]]:
    return [[f"c{category}" for category, count in enumerate(row) for _ in range(count)] for row in table]


def test_fleiss_kappa_worked_example() -> None:
    # p_j = (20, 28, 39, 21, 32) / 140 = 0.143, 0.200, 0.279, 0.150, 0.229; P_e = sum p_j^2 = 0.2127.
    # P_i = (sum_j n_ij^2 - 14) / (14 * 13): 1.000, 0.253, 0.308, 0.440, 0.330, 0.462, 0.242, 0.176,
    # 0.286, 0.286; P-bar = 0.378. kappa = (0.378 - 0.2127) / (1 - 0.2127) = 0.210.
    assert fleiss_kappa(units_from_table(FLEISS_TABLE)) == pytest.approx(0.20993, abs=1e-5)


def test_fleiss_kappa_with_different_numbers_of_ratings_per_unit() -> None:
    # Unit 1: [y, y] -> P_1 = 2*1 / (2*1) = 1. Unit 2: [y, n, n] -> P_2 = (0 + 2*1) / (3*2) = 1/3.
    # P-bar = 2/3. Ratings: 3 y, 2 n of 5 -> P_e = 9/25 + 4/25 = 13/25.
    # kappa = (2/3 - 13/25) / (1 - 13/25) = (11/75) / (12/25) = 11/36. A unit with one rating is left out.
    assert fleiss_kappa([["y", "y"], ["y", "n", "n"]]) == pytest.approx(11 / 36)
    assert fleiss_kappa([["y", "y"], ["y", "n", "n"], ["n"]]) == pytest.approx(11 / 36)


def test_fleiss_kappa_edge_cases() -> None:
    assert fleiss_kappa([["y", "y"], ["n", "n"]]) == 1.0
    assert fleiss_kappa([["y", "y"], ["y", "y", "y"]]) is None  # one category only: undefined
    with pytest.raises(MetricInputError, match="no unit with two or more ratings"):
        fleiss_kappa([["y"], ["n"]])
    with pytest.raises(MetricInputError, match="missing labels"):
        fleiss_kappa([["y", ""]])


# --- Krippendorff's alpha ---------------------------------------------------------------------------

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C: four observers,
# twelve units, values 1-5, missing values as None. Nominal alpha = 0.743.
RELIABILITY_DATA = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def columns(data: list[list[int | None]]) -> list[list[str]]:
    return [[str(row[unit]) for row in data if row[unit] is not None] for unit in range(len(data[0]))]


def test_krippendorff_alpha_worked_example() -> None:
    assert krippendorff_alpha_nominal(columns(RELIABILITY_DATA)) == pytest.approx(0.743, abs=5e-4)


def test_krippendorff_alpha_by_hand() -> None:
    # Units [y, y] and [y, n]: o_yy = 2/(2-1) = 2, o_yn = o_ny = 1; n = 4, n_y = 3, n_n = 1.
    # alpha = 1 - (n - 1)(n - sum o_cc) / (n^2 - sum n_c^2) = 1 - 3 * (4 - 2) / (16 - 10) = 0.
    assert krippendorff_alpha_nominal([["y", "y"], ["y", "n"]]) == pytest.approx(0.0)
    assert krippendorff_alpha_nominal([["y", "y"], ["n", "n", "n"], ["y"]]) == 1.0
    assert krippendorff_alpha_nominal([["y", "y"], ["y", "y"]]) is None


def test_krippendorff_alpha_matches_the_krippendorff_package() -> None:
    krippendorff = pytest.importorskip("krippendorff")
    np = pytest.importorskip("numpy")

    def package_alpha(data: list[list[int | None]]) -> float:
        matrix = np.array(
            [[np.nan if value is None else value for value in row] for row in data], dtype=float
        )
        return krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")

    assert krippendorff_alpha_nominal(columns(RELIABILITY_DATA)) == pytest.approx(
        package_alpha(RELIABILITY_DATA)
    )
    rng = random.Random(11)
    for _ in range(10):
        raters, units = rng.randint(2, 5), rng.randint(5, 40)
        data = [[rng.choice([1, 1, 2, 3, None]) for _ in range(units)] for _ in range(raters)]
        data[0] = [1] * units  # at least one value everywhere and more than one category overall
        data[1][0] = 2
        assert krippendorff_alpha_nominal(columns(data)) == pytest.approx(package_alpha(data), abs=1e-12)


# --- agreement over (unit, rater, label) triples ----------------------------------------------------


def test_agreement_over_raters_who_skip_units() -> None:
    ratings = [
        ("u1", "ann", "yes"), ("u1", "ben", "yes"), ("u1", "cat", "no"),
        ("u2", "ann", "no"), ("u2", "ben", "no"),
        ("u3", "ann", "yes"), ("u3", "cat", "yes"),
        ("u4", "ben", "no"),
    ]  # fmt: skip
    result = agreement(ratings)
    assert (result.units, result.pairable_units, result.ratings) == (4, 3, 8)
    assert result.raters == ("ann", "ben", "cat")
    assert result.labels == {"no": 4, "yes": 4}
    pairs = {(pair.first, pair.second): pair for pair in result.pairs}
    # ann/ben share u1, u2 and agree on both: each rater yes 1, no 1 -> p_e = 0.5, kappa = 1.
    assert (pairs["ann", "ben"].shared_units, pairs["ann", "ben"].agreed_units) == (2, 2)
    assert pairs["ann", "ben"].kappa == 1.0
    # ann/cat share u1 (yes/no) and u3 (yes/yes): A = 1; ann 2 yes, cat 1 yes 1 no.
    # kappa = (2*1 - (2*1 + 0*1)) / (4 - 2) = 0.
    assert pairs["ann", "cat"].kappa == 0.0 and pairs["ann", "cat"].observed_agreement == 0.5
    # ben/cat share u1 only: both one label each, different -> p_e = 0, kappa = (1*0 - 0) / 1 = 0.
    assert pairs["ben", "cat"].kappa == 0.0
    assert result.fleiss_kappa == pytest.approx(
        fleiss_kappa([["yes", "yes", "no"], ["no", "no"], ["yes", "yes"]])
    )
    assert result.as_dict()["pairs"][0]["cohen_kappa"] == 1.0


def test_agreement_with_a_single_rater_has_nothing_to_measure() -> None:
    result = agreement([("u1", "ann", "yes"), ("u2", "ann", "no")])
    assert result.pairs == () and result.pairable_units == 0
    assert result.fleiss_kappa is None and result.krippendorff_alpha is None


def test_agreement_refuses_duplicate_and_missing_ratings() -> None:
    with pytest.raises(MetricInputError, match="1 units rated twice by one rater"):
        agreement([("u1", "ann", "yes"), ("u1", "ann", "no"), ("u1", "ben", "no")])
    with pytest.raises(MetricInputError, match="1 missing labels"):
        agreement([("u1", "ann", None), ("u1", "ben", "no")])  # type: ignore[list-item]
