"""RAVENEA's graded metrics (MRR, P@k, nDCG@k) in default and parity modes, and the TREC readers.

Gains below are 2^(grade+3) − 1: grade 3 → 63, 2 → 31, 1 → 15, 0 → 7, −2 → 1, −3 → 0.
Discounts are 1/log2(position + 2) for positions 0, 1, 2, ...: 1, 1/log2(3), 1/2, 1/log2(5), ...
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from m4build.errors import ExitCode, InputFileError, UsageError
from m4build.metrics.checks import MetricInputError
from m4build.metrics.graded import graded_retrieval, relevant_documents
from m4build.metrics.trec import (
    RankedDoc,
    rank_by_rank_column,
    rank_by_score,
    read_qrels,
    read_ravenea_qrels,
    read_run,
    read_trec_qrels,
)


def ranked(*docs: tuple[str, float]) -> tuple[RankedDoc, ...]:
    """A ranking whose rank column agrees with the given order."""
    return tuple(RankedDoc(doc_id, score, rank) for rank, (doc_id, score) in enumerate(docs))


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# One query, judged a=3, b=1, c=0, d=−3, e=2; the run retrieves b, a, x (unjudged), d.
JUDGMENTS = {"q1": {"a": 3, "b": 1, "c": 0, "d": -3, "e": 2}}
RUN = {"q1": ranked(("b", 0.9), ("a", 0.8), ("x", 0.7), ("d", 0.6))}


def test_default_mode_worked_example() -> None:
    scores = graded_retrieval(RUN, JUDGMENTS, depths=(1, 3, 5))
    # Relevant = grade 3 = {a}, at position 2: MRR = 1/2.
    assert scores.mrr == pytest.approx(0.5)
    # P@1 = 0/1; P@3 = 1/3; P@5 = 1/5 (divided by k although only 4 documents were returned).
    assert scores.precision == pytest.approx({1: 0.0, 3: 1 / 3, 5: 0.2})
    # DCG@3 = 15 + 63/log2(3) + 0 (x is unjudged: no gain).
    # Ideal from all judgments, gains 63, 31, 15, 7, 0: IDCG@3 = 63 + 31/log2(3) + 15/2.
    dcg3 = 15 + 63 / math.log2(3)
    idcg3 = 63 + 31 / math.log2(3) + 15 / 2
    assert scores.ndcg[3] == pytest.approx(dcg3 / idcg3)  # 0.6079
    # nDCG@1 = 15/63; nDCG@5 adds d (gain 0) and the ideal's 7/log2(5) + 0/log2(6).
    assert scores.ndcg[1] == pytest.approx(15 / 63)
    assert scores.ndcg[5] == pytest.approx(dcg3 / (idcg3 + 7 / math.log2(5)))
    assert scores.queries == 1 and scores.queries_without_relevant == 0


def test_parity_mode_worked_example() -> None:
    scores = graded_retrieval(RUN, JUDGMENTS, depths=(1, 3, 5), mode="parity")
    assert scores.mrr == pytest.approx(0.5)
    # P@5 divides by the 4 documents in the top 5: 1/4.
    assert scores.precision == pytest.approx({1: 0.0, 3: 1 / 3, 5: 0.25})
    # x is graded 0 (gain 7): DCG@3 = 15 + 63/log2(3) + 7/2.
    # The ideal re-sorts the retrieved grades 3, 1, 0, −3: IDCG@3 = 63 + 15/log2(3) + 7/2.
    dcg3 = 15 + 63 / math.log2(3) + 7 / 2
    idcg3 = 63 + 15 / math.log2(3) + 7 / 2
    assert scores.ndcg[3] == pytest.approx(dcg3 / idcg3)  # 0.7668
    assert scores.ndcg[1] == pytest.approx(15 / 63)


def test_parity_scores_a_ranking_of_unjudged_documents_as_perfect() -> None:
    # The flaw of RAVENEA's gdeval.py: unjudged documents get grade 0 and the ideal DCG is built
    # from the retrieved list, so a run of documents nobody judged is its own ideal.
    judgments = {"q1": {"a": 3, "b": 2}}
    run = {"q1": ranked(("x", 0.9), ("y", 0.8))}
    parity = graded_retrieval(run, judgments, depths=(1, 3), mode="parity")
    default = graded_retrieval(run, judgments, depths=(1, 3))
    assert parity.ndcg == {1: 1.0, 3: 1.0}
    assert default.ndcg == {1: 0.0, 3: 0.0}
    assert parity.mrr == default.mrr == 0.0


def test_constant_score_retriever_looks_perfect_only_under_the_rank_column(tmp_path: Path) -> None:
    # RAVENEA stores candidates in grade order; its inference.py writes ranks after a stable sort,
    # so equal scores keep the stored order and the rank column is the ideal ranking.
    metadata = write(
        tmp_path / "metadata_test.jsonl",
        json.dumps(
            {"file_name": "img.jpg", "enwiki_ids": ["z9", "m5", "a1"], "culture_relevance": [3, 1, -2]}
        )
        + "\n",
    )
    run_file = write(
        tmp_path / "constant.run",
        "".join(f"img.jpg\tQ0\t{d}\t{r}\t1.0\tconst\n" for r, d in enumerate(["z9", "m5", "a1"])),
    )
    judgments, run = read_qrels(metadata), read_run(run_file)
    parity = graded_retrieval(run, judgments, depths=(1, 3), mode="parity")
    assert (parity.mrr, parity.precision[1], parity.ndcg[1], parity.ndcg[3]) == (1.0, 1.0, 1.0, 1.0)
    # Default: the tie is broken by document id, a1 (−2), m5 (1), z9 (3): MRR = 1/3, P@1 = 0,
    # nDCG@1 = gain(−2)/gain(3) = 1/63.
    default = graded_retrieval(run, judgments, depths=(1, 3))
    assert default.mrr == pytest.approx(1 / 3)
    assert default.precision[1] == 0.0
    assert default.ndcg[1] == pytest.approx(1 / 63)
    # nDCG@3 = (1 + 15/log2(3) + 63/2) / (63 + 15/log2(3) + 1/2)
    assert default.ndcg[3] == pytest.approx((1 + 15 / math.log2(3) + 31.5) / (63 + 15 / math.log2(3) + 0.5))


def test_parity_precision_divides_by_the_documents_returned() -> None:
    # A run returning one correct document: gdeval.py's P@5 = 1/1, trec_eval's P_5 = 1/5.
    run, judgments = {"q1": ranked(("a", 1.0))}, {"q1": {"a": 3, "b": 1}}
    assert graded_retrieval(run, judgments, depths=(5,), mode="parity").precision[5] == 1.0
    assert graded_retrieval(run, judgments, depths=(5,)).precision[5] == 0.2


def test_parity_follows_the_rank_column_and_default_the_scores() -> None:
    # The rank column says b first, the scores say a first.
    run = {"q1": (RankedDoc("a", 0.9, 2), RankedDoc("b", 0.1, 1))}
    judgments = {"q1": {"a": 3, "b": 1}}
    assert graded_retrieval(run, judgments, depths=(1,), mode="parity").mrr == 0.5
    assert graded_retrieval(run, judgments, depths=(1,)).mrr == 1.0


def test_queries_without_a_relevant_document() -> None:
    # q2's best grade is 0: no relevant document. Its ranking is c (0) then d (−1).
    judgments = {"q1": {"a": 2, "b": 1}, "q2": {"c": 0, "d": -1}}
    run = {"q1": ranked(("b", 0.9), ("a", 0.8)), "q2": ranked(("c", 0.9), ("d", 0.8))}
    default = graded_retrieval(run, judgments, depths=(1,))
    parity = graded_retrieval(run, judgments, depths=(1,), mode="parity")
    # MRR leaves q2 out in both modes: q1 alone, 1/2.
    assert default.mrr == parity.mrr == 0.5
    # P@1: q1 scores 0; parity also counts q2 as 0, default leaves it out. Both means are 0.
    assert default.per_query[1].precision[1] is None and parity.per_query[1].precision[1] == 0.0
    # nDCG@1 is defined for q2 in both modes (grade 0 gains 7): 7/7 = 1.
    # q1: 15/31. Mean (15/31 + 1) / 2.
    assert default.ndcg[1] == pytest.approx((15 / 31 + 1) / 2)
    assert default.queries_without_relevant == parity.queries_without_relevant == 1


def test_parity_counts_queries_without_relevant_documents_as_zero_precision() -> None:
    judgments = {"q1": {"a": 2}, "q2": {"c": -1}}
    run = {"q1": ranked(("a", 0.9)), "q2": ranked(("c", 0.9))}
    # Parity: P@1 = (1 + 0) / 2; default: q1 alone, 1.
    assert graded_retrieval(run, judgments, depths=(1,), mode="parity").precision[1] == 0.5
    assert graded_retrieval(run, judgments, depths=(1,)).precision[1] == 1.0


def test_every_judgment_at_the_lowest_grade() -> None:
    # Every gain is 0: parity returns 0, default has no ideal to divide by and leaves it undefined.
    judgments = {"q1": {"a": -3, "b": -3}}
    run = {"q1": ranked(("a", 0.9), ("b", 0.8))}
    assert graded_retrieval(run, judgments, depths=(1,), mode="parity").ndcg[1] == 0.0
    default = graded_retrieval(run, judgments, depths=(1,))
    assert default.ndcg[1] is None and default.mrr is None


def test_modes_agree_on_a_complete_ranking_with_distinct_scores() -> None:
    # Every judged candidate ranked, distinct scores, at least k documents: nothing to disagree on.
    judgments = {"q1": {"a": 1, "b": 3, "c": -1}}
    run = {"q1": ranked(("a", 0.9), ("b", 0.5), ("c", 0.1))}
    default = graded_retrieval(run, judgments, depths=(1, 2, 3)).as_dict()
    parity = graded_retrieval(run, judgments, depths=(1, 2, 3), mode="parity").as_dict()
    default.pop("mode"), parity.pop("mode")
    assert default == parity


def test_as_dict_names_the_metrics_like_ravenea() -> None:
    report = graded_retrieval(RUN, JUDGMENTS).as_dict()
    assert list(report)[:8] == ["mode", "MRR", "P@1", "P@3", "P@5", "nDCG@1", "nDCG@3", "nDCG@5"]
    assert report["per_query"][0]["query"] == "q1"
    assert json.loads(json.dumps(report)) == report


def test_relevant_documents_are_those_with_the_positive_maximum_grade() -> None:
    assert relevant_documents({"a": 2, "b": 2, "c": 1}) == {"a", "b"}
    assert relevant_documents({"a": 0, "b": -2}) == frozenset()


def test_scoring_a_subset_of_the_judged_queries() -> None:
    judgments = {**JUDGMENTS, "q2": {"z": 3}}
    assert graded_retrieval(RUN, judgments, queries=["q1"]).queries == 1
    with pytest.raises(MetricInputError, match="1 references without a prediction \\(e.g. q2\\)"):
        graded_retrieval(RUN, judgments)


def test_bad_rankings_are_reported_together() -> None:
    run = {"q1": (RankedDoc("a", float("nan"), 0), RankedDoc("b", 0.5, 1), RankedDoc("b", 0.4, 2)), "q2": ()}
    judgments = {"q1": {"a": 4}, "q2": {"z": 1}}
    with pytest.raises(MetricInputError) as caught:
        graded_retrieval(run, judgments)
    message = str(caught.value)
    assert "1 documents with a missing score (e.g. q1/a)" in message
    assert "1 documents ranked twice for one query (e.g. q1/b)" in message
    assert "1 queries with an empty ranking (e.g. q2)" in message
    assert "1 grades outside -3..3 (e.g. q1/a=4)" in message
    assert caught.value.exit_code == ExitCode.INPUT


def test_queries_named_but_never_judged() -> None:
    with pytest.raises(MetricInputError, match="queries without judgments"):
        graded_retrieval({"q9": ranked(("a", 1.0))}, JUDGMENTS, queries=["q9"])
    with pytest.raises(MetricInputError, match="empty query sets"):
        graded_retrieval({}, {})


def test_bad_options() -> None:
    with pytest.raises(UsageError):
        graded_retrieval(RUN, JUDGMENTS, mode="official")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        graded_retrieval(RUN, JUDGMENTS, depths=(0, 3))


# --- TREC readers ---------------------------------------------------------------------------------


def test_rank_by_score_breaks_ties_by_document_id_not_input_order() -> None:
    docs = ranked(("c", 0.5), ("a", 0.5), ("b", 0.9))
    assert rank_by_score(docs) == ["b", "a", "c"]
    assert rank_by_rank_column(docs) == ["c", "a", "b"]


def test_read_run(tmp_path: Path) -> None:
    path = write(
        tmp_path / "bm25.run", "q1 Q0 d2 1 2.5 bm25\n\nq1 Q0 d1 2 1.5e0 bm25\nq2\tQ0\td7\t0\t-3\tbm25\r\n"
    )
    assert read_run(path) == {
        "q1": (RankedDoc("d2", 2.5, 1), RankedDoc("d1", 1.5, 2)),
        "q2": (RankedDoc("d7", -3.0, 0),),
    }


def test_malformed_run_lines_name_the_file_and_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path / "bad.run",
        "q1 Q0 d1 1 0.9 t\nq1 Q0 d2 2\nq1 Q0 d3 third 0.7 t\nq1 Q0 d4 4 nan t\nq1 Q0 d1 5 0.5 t\n",
    )
    with pytest.raises(MetricInputError) as caught:
        read_run(path)
    message = str(caught.value)
    assert f"Cannot score run file {path}" in message
    assert "1 lines without 6 fields (e.g. line 2: 'q1 Q0 d2 2')" in message
    assert "1 lines whose rank is not an integer (e.g. line 3:" in message
    assert "1 lines whose score is not a number (e.g. line 4:" in message
    assert "1 documents ranked twice for one query (e.g. line 5:" in message
    assert "query Q0 document rank score tag" in message  # the hint


def test_empty_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(MetricInputError, match="files without a single ranking line"):
        read_run(write(tmp_path / "empty.run", "\n"))
    with pytest.raises(InputFileError, match="Cannot read") as caught:
        read_run(tmp_path / "absent.run")
    assert caught.value.exit_code == ExitCode.INPUT


def test_read_trec_qrels(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels.txt", "q1 0 d1 3\nq1 0 d2 -3\nq2 0 d1 0\n")
    assert read_qrels(path) == read_trec_qrels(path) == {"q1": {"d1": 3, "d2": -3}, "q2": {"d1": 0}}
    bad = write(tmp_path / "bad.txt", "q1 0 d1 3\nq1 0 d1 2\nq1 0 d2 high\nq1 d3 1\n")
    with pytest.raises(MetricInputError) as caught:
        read_trec_qrels(bad)
    message = str(caught.value)
    assert "documents judged twice for one query (e.g. line 2: 'q1 0 d1 2')" in message
    assert "lines whose grade is not an integer (e.g. line 3:" in message
    assert "lines without 4 fields (e.g. line 4:" in message


def test_read_ravenea_metadata(tmp_path: Path) -> None:
    lines = [
        {
            "file_name": "a.jpg",
            "enwiki_ids": ["101", 202],
            "culture_relevance": [3, -1.0],
            "country": "Nigeria",
        },
        {"file_name": "b.jpg", "enwiki_ids": ["303"], "culture_relevance": [0]},
    ]
    path = write(tmp_path / "metadata.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    assert read_qrels(path) == {"a.jpg": {"101": 3, "202": -1}, "b.jpg": {"303": 0}}


def test_malformed_ravenea_metadata_names_the_lines(tmp_path: Path) -> None:
    lines = [
        # gdeval.py zips the lists and silently drops "2".
        '{"file_name": "a.jpg", "enwiki_ids": ["1", "2"], "culture_relevance": [3]}',
        '{"file_name": "b.jpg", "enwiki_ids": ["1"], "culture_relevance": [1.5]}',
        "not json",
        '{"file_name": "c.jpg", "enwiki_ids": ["1"]}',
    ]
    path = write(tmp_path / "metadata.jsonl", "\n".join(lines) + "\n")
    with pytest.raises(MetricInputError) as caught:
        read_ravenea_qrels(path)
    message = str(caught.value)
    assert f"metadata file {path}" in message
    assert "lines whose id and grade lists differ in length or are empty (e.g. line 1:" in message
    assert "lines with a non-integer grade or a malformed id (e.g. line 2:" in message
    assert "lines that are not a JSON object (e.g. line 3: 'not json')" in message
    assert "lines without file_name, enwiki_ids and culture_relevance (e.g. line 4:" in message


def test_files_read_and_scored_end_to_end_in_parity(tmp_path: Path) -> None:
    # Two images; ranks 0-based as RAVENEA's inference.py writes them.
    metadata = write(
        tmp_path / "metadata_test.jsonl",
        json.dumps({"file_name": "p.jpg", "enwiki_ids": ["1", "2", "3"], "culture_relevance": [2, 2, -3]})
        + "\n"
        + json.dumps({"file_name": "s.jpg", "enwiki_ids": ["4", "5"], "culture_relevance": [1, 3]})
        + "\n",
    )
    run_file = write(
        tmp_path / "clip.run",
        "p.jpg\tQ0\t3\t0\t0.9\tclip\np.jpg\tQ0\t2\t1\t0.8\tclip\np.jpg\tQ0\t1\t2\t0.7\tclip\n"
        "s.jpg\tQ0\t5\t0\t0.6\tclip\ns.jpg\tQ0\t4\t1\t0.5\tclip\n",
    )
    scores = graded_retrieval(read_run(run_file), read_qrels(metadata), mode="parity")
    # p.jpg: grades by rank −3, 2, 2; relevant {1, 2}: RR = 1/2, P@1 = 0, P@3 = 2/3.
    #   nDCG@1 = 0/31; nDCG@3 = (31/log2(3) + 31/2) / (31 + 31/log2(3) + 0).
    # s.jpg: grades 3, 1; relevant {5}: RR = 1, P@1 = 1, P@3 = 1/2 (two documents); nDCG = 1.
    assert scores.mrr == pytest.approx(0.75)
    assert scores.precision[1] == pytest.approx(0.5)
    assert scores.precision[3] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert scores.ndcg[1] == pytest.approx(0.5)
    p_ndcg3 = (31 / math.log2(3) + 15.5) / (31 + 31 / math.log2(3))
    assert scores.ndcg[3] == pytest.approx((p_ndcg3 + 1) / 2)
