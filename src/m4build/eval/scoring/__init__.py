"""Scoring predictions made elsewhere, read in each benchmark's own file format.

One module per benchmark: :mod:`.worldcuisines` (the WorldCuisines repository's ``*_pred*.jsonl``
files against its VQA rows), :mod:`.cvqa` (M4-RAG's ``{ID}-en``/``{ID}-local`` responses against CVQA
rows with labels) and :mod:`.ravenea` (TREC runs against RAVENEA metadata or TREC qrels). Each reads
strictly, refuses what it cannot score with a message naming the file and line, and hands the
scoring to :mod:`m4build.metrics`, in the reference scorer's behaviour (``parity``) or corrected.
"""

from __future__ import annotations

from m4build.eval.scoring.cvqa import score_cvqa
from m4build.eval.scoring.ravenea import RetrievalReport, score_ravenea
from m4build.eval.scoring.report import ChoiceReport
from m4build.eval.scoring.worldcuisines import score_worldcuisines

__all__ = ["ChoiceReport", "RetrievalReport", "score_cvqa", "score_ravenea", "score_worldcuisines"]
