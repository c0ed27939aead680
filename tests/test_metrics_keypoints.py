"""CHARGE's keypoint Correctness and Coverage over a judge's match decisions."""

from __future__ import annotations

import json

import pytest

from m4build.metrics.checks import MetricInputError
from m4build.metrics.keypoints import KeypointJudgement, keypoint_scores

# Ground-truth keypoints of one Chart-MRAG-style question.
REFERENCE = [
    "52% of Americans have little or no confidence in Netanyahu",
    "31% have a lot or some confidence in him",
    "17% have not heard of him or did not answer",
]


def judged(
    item: str, predicted: int, matches: list[tuple[int, int]], reference: list[str] = REFERENCE
) -> KeypointJudgement:
    return KeypointJudgement(item, reference, [f"claim {n}" for n in range(predicted)], matches)


def test_worked_example() -> None:
    items = [
        judged("perfect", 3, [(0, 2), (1, 0), (2, 1)]),  # a one-to-one pairing in any order: correct, 3/3
        judged("partial", 2, [(0, 0), (1, 1)]),  # 2 of 3 facts, one missing: incorrect, 2/3
        judged(
            "extra-claim", 4, [(0, 0), (1, 1), (2, 2)]
        ),  # every fact, plus an unsupported claim: incorrect, 3/3
        judged("refusal", 0, []),  # nothing stated: incorrect, 0/3
    ]
    scores = keypoint_scores(items)
    by_item = {item.item_id: item for item in scores.per_item}
    assert [
        (by_item[i].correct, by_item[i].coverage) for i in ("perfect", "partial", "extra-claim", "refusal")
    ] == [
        (True, 1.0),
        (False, pytest.approx(2 / 3)),
        (False, 1.0),
        (False, 0.0),
    ]
    # Correctness 1 of 4; Coverage (1 + 2/3 + 1 + 0) / 4 = 2/3.
    assert scores.correctness == 0.25
    assert scores.coverage == pytest.approx(2 / 3)
    assert [item.item_id for item in scores.per_item] == ["extra-claim", "partial", "perfect", "refusal"]


def test_a_ground_truth_keypoint_matched_twice_counts_once() -> None:
    # Response keypoints 0 and 1 both state fact 0 (and the pair (0, 0) is judged twice); fact 2 is missed.
    item = keypoint_scores([judged("q", 3, [(0, 0), (0, 1), (0, 0), (1, 2)])]).per_item[0]
    assert item.covered_keypoints == 2 and item.coverage == pytest.approx(2 / 3)
    assert not item.correct


def test_correctness_needs_a_one_to_one_pairing_not_just_every_keypoint_touched() -> None:
    # Every ground-truth and every response keypoint appears in some match, and the counts agree,
    # but facts 0 and 1 are both matched only by response keypoint 0: no pairing uses all three.
    item = keypoint_scores([judged("q", 3, [(0, 0), (1, 0), (2, 1), (2, 2)])]).per_item[0]
    assert item.coverage == 1.0
    assert not item.correct
    # With (1, 1) also judged, the pairing 0-0, 1-1, 2-2 exists.
    assert keypoint_scores([judged("q", 3, [(0, 0), (1, 0), (1, 1), (2, 1), (2, 2)])]).per_item[0].correct


def test_one_response_keypoint_stating_two_facts_covers_both_but_is_not_correct() -> None:
    # "52% have little confidence and 31% have some" states facts 0 and 1; response keypoint 1 is fact 2.
    item = keypoint_scores([judged("q", 2, [(0, 0), (1, 0), (2, 1)])]).per_item[0]
    assert item.coverage == 1.0 and not item.correct


def test_judgements_accept_lists_from_json() -> None:
    record = json.loads(
        '{"item_id": "q", "reference": ["a", "b"], "predicted": ["b", "a"], "matches": [[0, 1], [1, 0]]}'
    )
    judgement = KeypointJudgement(**record)
    assert judgement.matches == ((0, 1), (1, 0))
    assert keypoint_scores([judgement]).as_dict() == {
        "correctness": 1.0,
        "coverage": 1.0,
        "items": 1,
        "per_item": [
            {
                "item": "q",
                "correct": True,
                "coverage": 1.0,
                "reference_keypoints": 2,
                "predicted_keypoints": 2,
                "covered_keypoints": 2,
            }
        ],
    }


def test_bad_judgements_are_reported_together() -> None:
    items = [
        judged(
            "q1", 2, [(3, 0), (0, 2), (-1, 0)]
        ),  # reference 3 and response 2 do not exist; −1 is not an index
        judged("q1", 1, [(0, 0)]),
        judged("q2", 1, [], reference=[]),
        KeypointJudgement("q3", ["a"], ["b"], [(0, 0, 1)]),  # type: ignore[list-item]
    ]
    with pytest.raises(MetricInputError) as caught:
        keypoint_scores(items)
    message = str(caught.value)
    assert (
        "4 matches naming a keypoint that does not exist (e.g. q1 (3, 0), q1 (0, 2), q1 (-1, 0))" in message
    )
    assert "1 items judged twice (e.g. q1)" in message
    assert "1 items without ground-truth keypoints (e.g. q2)" in message
    assert "(ground-truth index, response index)" in message  # the hint
    with pytest.raises(MetricInputError, match="empty judgement lists"):
        keypoint_scores([])


# -- the judge, through m4build.llm against a loopback server --------------------------------------
def test_the_llm_judge_fills_judgements_that_score_and_reports_impossible_matches(tmp_path):
    from m4build.llm.cache import ResponseCache
    from m4build.llm.config import ModelConfig
    from m4build.llm.model import LanguageModel
    from m4build.metrics.keypoint_judge import KeypointItem, judge_keypoints
    from tests.servers.chat import ChatServer, Script, answer

    full = '{"response_keypoints": ["Sales rose 5% in 2020.", "Costs fell."], "matches": [{"ground_truth": 1, "response": 1}, {"ground_truth": 2, "response": 2}]}'
    half = '{"response_keypoints": ["Sales rose 5% in 2020."], "matches": [{"ground_truth": 1, "response": 1}]}'
    wrong = '{"response_keypoints": ["x"], "matches": [{"ground_truth": 3, "response": 1}]}'
    script = Script({"answer A": [answer(full)], "answer B": [answer(half)], "answer C": [answer(wrong)]})
    keypoints = ("Sales rose 5% in 2020.", "Costs fell in 2020.")
    items = [
        KeypointItem(name, "What changed in 2020?", "Sales rose, costs fell.", keypoints, f"answer {name}")
        for name in ("A", "B", "C")
    ]
    with ChatServer(script) as server:
        config = ModelConfig("openai-compatible", "judge", base_url=server.openai_url)
        model = LanguageModel.open(config, cache=ResponseCache(tmp_path / "c.sqlite"), environ={})
        judged = judge_keypoints(model, items)
    assert [j.item_id for j in judged.judgements] == ["A", "B"]
    assert judged.failures[0][0] == "C" and "do not exist" in judged.failures[0][1]
    assert judged.provenance["prompt"] == "charge/keypoint_judge"
    scores = keypoint_scores(judged.judgements)
    # A: 2 of 2 matched one-to-one, equal counts -> correct, coverage 1; B: 1 of 2 -> coverage 0.5
    assert scores.correctness == 0.5 and scores.coverage == 0.75
