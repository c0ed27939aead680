"""RAVENEA's annotation round trip: (image, article) pairs out to annotators, graded judgments back.

``export_tasks`` writes Label Studio tasks or CSV sheets from a run folder; ``import_annotations``
reads the annotators' files back, validates them, keeps each file's labels in its own parquet,
resolves the answers by majority into culture-relevance grades and measures agreement.
"""

from m4build.annotation.ravenea.export import FORMATS, ExportResult, export_tasks
from m4build.annotation.ravenea.importer import FileOutcome, ImportReport, import_annotations
from m4build.annotation.ravenea.schema import ANSWERS, QUESTIONS, pair_key

__all__ = [
    "ANSWERS",
    "FORMATS",
    "QUESTIONS",
    "ExportResult",
    "FileOutcome",
    "ImportReport",
    "export_tasks",
    "import_annotations",
    "pair_key",
]
