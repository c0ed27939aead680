"""The evaluation report: Markdown tables per setting and language, and the paper's three plots.

Plots are PNGs rendered with matplotlib's non-interactive backend into ``RUN/plots/``: accuracy by
setting; retention and correction against the mean judge score of the retrieved passages; and
the per-language change from the English to the translated prompt and context.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from m4build.runs import atomic_write_text

PLOTS = "plots"


def write_report(folder: Path, scores: Mapping[str, Any], header: Mapping[str, Any]) -> Path:
    """Write ``report.md`` and its plots into ``folder``; returns the report's path."""
    plots = render_plots(folder / PLOTS, scores)
    lines = [f"# M4-RAG evaluation: {header['dataset']}", ""]
    lines += [f"- **{key}**: {value}" for key, value in header.items() if key != "dataset"]
    lines += ["", "## Accuracy by setting", "", _settings_table(scores), ""]
    lines += [
        "Answered items are scored; failed ones (a step before or during inference failed) are counted, not "
        "scored. English-only retrieval counts items whose language has no shard in the index.",
        "",
    ]
    if "accuracy_by_setting" in plots:
        lines += [f"![accuracy by setting]({PLOTS}/{plots['accuracy_by_setting'].name})", ""]
    if scores.get("rag_effect"):
        lines += ["## RAG against no-rag", "", _effect_table(scores["rag_effect"]), ""]
    if scores.get("judge"):
        lines += ["## Judge scores of the given contexts (1–5)", "", _judge_table(scores["judge"]), ""]
        if "retention_by_judge_score" in plots:
            lines += [f"![retention and correction by judge score]({PLOTS}/{plots['retention_by_judge_score'].name})", ""]
    lines += ["## Accuracy by language", "", _language_table(scores), ""]
    for what, changes in scores.get("languages", {}).items():
        lines += [f"## English vs translated {what}", "", _change_table(changes), ""]
    if "language_change" in plots:
        lines += [f"![change by language]({PLOTS}/{plots['language_change'].name})", ""]
    path = folder / "report.md"
    atomic_write_text(path, "\n".join(lines))
    return path


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _settings_table(scores: Mapping[str, Any]) -> str:
    rows = [
        "| setting | items | answered | macro | micro | unparsable | failed | English-only retrieval |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, entry in scores["settings"].items():
        accuracy = entry.get("accuracy", {})
        rows.append(
            f"| {name} | {entry['items']} | {accuracy.get('n', 0)} | {_percent(accuracy.get('macro'))} | "
            f"{_percent(accuracy.get('micro'))} | {accuracy.get('unparsable', 0)} | {entry['failed']} | "
            f"{entry.get('english_only_retrieval', 0)} |"
        )
    return "\n".join(rows)


def _effect_table(effects: Mapping[str, Any]) -> str:
    rows = ["| setting | paired items | retention | correction | accuracy without | accuracy with |", "|---|---:|---:|---:|---:|---:|"]
    for name, effect in effects.items():
        rows.append(
            f"| {name} | {effect['n']} | {_percent(effect['retention'])} | {_percent(effect['correction'])} | "
            f"{_percent(effect['accuracy_without_rag'])} | {_percent(effect['accuracy_with_rag'])} |"
        )
    return "\n".join(rows)


def _judge_table(judged: Mapping[str, Any]) -> str:
    rows = ["| setting | judged items | pairs | failed | mean score |", "|---|---:|---:|---:|---:|"]
    for name, entry in judged.items():
        rows.append(f"| {name} | {entry['items']} | {entry['pairs']} | {entry['failed']} | {entry['mean']:.2f} |")
    return "\n".join(rows)


def _language_table(scores: Mapping[str, Any]) -> str:
    settings = [name for name, entry in scores["settings"].items() if "accuracy" in entry]
    languages = sorted({lang for name in settings for lang in scores["settings"][name]["accuracy"]["by_language"]})
    rows = ["| language | " + " | ".join(settings) + " |", "|---|" + "---:|" * len(settings)]
    for lang in languages:
        cells = []
        for name in settings:
            group = scores["settings"][name]["accuracy"]["by_language"].get(lang)
            cells.append(f"{_percent(group['accuracy'])} ({group['n']})" if group else "–")
        rows.append(f"| {lang} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _change_table(changes: Mapping[str, Any]) -> str:
    rows = ["| language | English | translated | change (points) |", "|---|---:|---:|---:|"]
    for lang, change in changes.items():
        rows.append(
            f"| {lang} | {_percent(change['english'])} | {_percent(change['translated'])} | {100 * change['change']:+.1f} |"
        )
    return "\n".join(rows)


def render_plots(folder: Path, scores: Mapping[str, Any]) -> dict[str, Path]:
    """The plots that the scores allow; each one is skipped when its data are absent."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    made: dict[str, Path] = {}
    settings = {name: entry["accuracy"] for name, entry in scores["settings"].items() if "accuracy" in entry}
    if settings:
        figure, axes = plt.subplots(figsize=(max(4.0, 1.3 * len(settings)), 3.5))
        names = list(settings)
        axes.bar(range(len(names)), [100 * settings[name]["macro"] for name in names], color="#4C72B0")
        axes.set_xticks(range(len(names)), names, rotation=30, ha="right")
        axes.set_ylabel("macro accuracy (%)")
        axes.set_ylim(0, 100)
        made["accuracy_by_setting"] = _save(figure, folder / "accuracy_by_setting.png")
    binned = {name: entry["rag_effect_by_score"]["bins"] for name, entry in scores.get("judge", {}).items() if "rag_effect_by_score" in entry}
    if binned:
        figure, axes = plt.subplots(1, 2, figsize=(8, 3.5), sharey=True)
        for name, bins in binned.items():
            labels = [b["label"] for b in bins]
            for axis, key in zip(axes, ("retention", "correction")):
                values = [100 * b[key] if b[key] is not None else float("nan") for b in bins]
                axis.plot(labels, values, marker="o", label=name)
                axis.set_title(key)
                axis.set_xlabel("mean judge score")
        axes[0].set_ylabel("%")
        axes[1].legend(fontsize="small")
        made["retention_by_judge_score"] = _save(figure, folder / "retention_by_judge_score.png")
    changes = scores.get("languages", {})
    if changes:
        figure, axes = plt.subplots(figsize=(8, 3.5))
        width = 0.8 / len(changes)
        languages = sorted({lang for change in changes.values() for lang in change})
        for offset, (what, change) in enumerate(changes.items()):
            positions = [i + offset * width for i in range(len(languages))]
            axes.bar(positions, [100 * change.get(lang, {}).get("change", 0.0) for lang in languages], width, label=what)
        axes.axhline(0, color="black", linewidth=0.8)
        axes.set_xticks([i + width * (len(changes) - 1) / 2 for i in range(len(languages))], languages, rotation=60, ha="right")
        axes.set_ylabel("translated − English (points)")
        axes.legend(fontsize="small")
        made["language_change"] = _save(figure, folder / "language_change.png")
    return made


def _save(figure: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure.tight_layout()
    temporary = path.with_name(f".{path.name}.tmp")
    figure.savefig(temporary, dpi=120, format="png")
    plt.close(figure)
    temporary.replace(path)
    return path
