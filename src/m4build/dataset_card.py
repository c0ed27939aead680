"""The dataset card (README.md) of a corpus folder, rendered from ``hub_cards/`` templates.

Two commands write this card: ``m4build corpus`` into the run folder (so that the folder it builds
already loads with ``load_dataset`` and explains itself), and ``m4build push`` into the repo
folder, where it also knows the index shards and the repo id. DESIGN.md lets a room import only
from rooms to its left (pipelines -> run folder -> index -> hub), so the renderer cannot live in
``m4build.hub`` (the pipeline could not call it) nor in the pipeline (hub would reach back into
it). It lives here, next to ``dataset_folder``, at the run-folder level both may use, and it is a
pure function of what the run folder records: the corpus manifest, the configs, and optionally
the index manifest. One renderer, so the two cards can never drift apart.

``string.Template`` rather than Jinja2: the template only receives finished Markdown blocks; the
decisions (which facts to show, whether there is an index) are Python and tested here, so a
template engine would add a dependency and a second language for no gain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from string import Template
from typing import Any

from m4build.dataset_folder import ConfigFiles, front_matter
from m4build.languages import load_languages
from m4build.resources import data_path
from m4build.wikis import subdomain

TEMPLATE = "m4rag_corpus.md"
RAVENEA_CARD = "ravenea"  # a manifest's "card" key picks this template instead
RAVENEA_NAME = "RAVENEA-style cultural images with graded Wikipedia relevance"
LICENSE = "cc-by-sa-4.0"
SOURCE_DATASETS = {
    "worldcuisines": ["worldcuisines/vqa-v1.1", "worldcuisines/food-kb"],
    "cvqa": ["afaji/cvqa"],
}
PRETTY_NAMES = {"worldcuisines": "WorldCuisines", "cvqa": "CVQA"}
TAGS = ["m4build", "m4-rag", "wikipedia", "multilingual", "rag"]
TASK_CATEGORIES = ["text-retrieval", "visual-question-answering"]

# Wikipedia subdomains that are not ISO 639 codes, mapped to the code of the language they hold
# (from Wikimedia's list of non-standard language codes). Everything else is already ISO 639.
WIKI_TO_ISO = {
    "simple": "en",
    "zh-yue": "yue",
    "zh-min-nan": "nan",
    "zh-classical": "lzh",
    "be-tarask": "be",
    "be-x-old": "be",
    "als": "gsw",
    "bat-smg": "sgs",
    "fiu-vro": "vro",
    "roa-rup": "rup",
    "nds-nl": "nds",
    "cbk-zam": "cbk",
}
SIZE_BUCKETS = [
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
    (1_000_000_000, "100M<n<1B"),
]
# The index facts a reader needs to query the shards correctly (the rest stays in the manifest).
DENSE_FACTS = (
    "revision",
    "dimension",
    "metric",
    "normalize",
    "query_prefix",
    "passage_prefix",
    "max_seq_length",
)
VERSION_KEYS = ("m4build", "datasets", "pyarrow", "bm25s", "mwclient", "lxml", "python")


def hub_language(code: str) -> str:
    """The Hub's ``language`` code for a BCP-47 tag or a wiki subdomain.

    The Hub wants ISO 639-1 where it exists, else ISO 639-3. BCP-47 already picks the shortest
    ISO code for its primary subtag, so a tag reduces to that subtag (``nan-Hans`` -> ``nan``);
    wiki subdomains need the table above (``zh-yue`` -> ``yue``, ``simple`` -> ``en``).
    """
    code = code.strip().lower()
    return WIKI_TO_ISO.get(code) or code.split("-")[0]


def size_category(rows: int) -> str:
    """The Hub's size bucket for a row count: n<1K, 1K<n<10K, ..., n>1B."""
    for bound, label in SIZE_BUCKETS:
        if rows < bound:
            return label
    return "n>1B"


def card_languages(manifest: Mapping[str, Any], configs: Sequence[ConfigFiles]) -> list[str]:
    """Every language the folder holds text in: the corpus editions, the queries' languages, English.

    The queries config carries native-language queries even for editions that retrieved nothing,
    so the benchmark's languages count as well as the wikis with configs.
    """
    registry = load_languages()
    codes = {hub_language(registry.get(code).bcp47) for code in manifest["settings"]["languages"]}
    codes |= {hub_language(c.name) for c in configs if c.name not in ("default", "queries")}
    return sorted(codes | {"en"})


def card_metadata(manifest: Mapping[str, Any], configs: Sequence[ConfigFiles]) -> dict[str, Any]:
    """The YAML front matter fields the Hub indexes, in the order its card editor writes them."""
    benchmark = manifest["settings"]["benchmark"]
    total = sum(c.rows for c in configs if c.name == "default")
    return {
        "pretty_name": pretty_name(benchmark),
        "language": card_languages(manifest, configs),
        "license": LICENSE,
        "size_categories": [size_category(total)],
        "task_categories": TASK_CATEGORIES,
        "source_datasets": SOURCE_DATASETS[benchmark],
        "tags": TAGS,
    }


def pretty_name(benchmark: str) -> str:
    return f"M4-RAG Wikipedia corpus for {PRETTY_NAMES[benchmark]}"


def render_card(
    manifest: Mapping[str, Any],
    configs: Sequence[ConfigFiles],
    *,
    index: Mapping[str, Any] | None = None,
    repo_id: str | None = None,
) -> str:
    """The whole README.md: front matter with ``configs`` plus the body from the template.

    ``index`` is the index manifest (``indexes/manifest.json``) when the folder ships shards;
    ``repo_id`` makes the usage example copy-pasteable once the folder has a home on the Hub.
    """
    has_default = any(c.name == "default" for c in configs)
    if manifest.get("card") == RAVENEA_CARD:
        metadata, body = ravenea_metadata(manifest, configs), ravenea_body(manifest, configs, repo_id)
    else:
        metadata, body = card_metadata(manifest, configs), card_body(manifest, configs, index, repo_id)
    header = front_matter(configs, metadata, default="default" if has_default else None)
    return header + "\n" + body.strip() + "\n"


def card_body(
    manifest: Mapping[str, Any],
    configs: Sequence[ConfigFiles],
    index: Mapping[str, Any] | None,
    repo_id: str | None,
) -> str:
    benchmark = manifest["settings"]["benchmark"]
    example = next((c.name for c in configs if c.name not in ("default", "queries")), "default")
    template = Template(data_path("hub_cards", TEMPLATE).read_text(encoding="utf-8"))
    return template.substitute(
        pretty_name=pretty_name(benchmark),
        benchmark=PRETTY_NAMES[benchmark],
        k=manifest["settings"]["k"],
        config_table=config_table(configs),
        repo_hint=repo_id or "path/to/this/folder",
        example_config=example,
        build_facts="\n".join(build_facts(manifest)),
        index_section=index_section(index, repo_id),
        source_datasets=", ".join(SOURCE_DATASETS[benchmark]),
    )


def ravenea_metadata(manifest: Mapping[str, Any], configs: Sequence[ConfigFiles]) -> dict[str, Any]:
    total = sum(c.rows for c in configs if c.name == "default")
    return {
        "pretty_name": RAVENEA_NAME,
        "language": ["en"],
        "license": LICENSE,
        "size_categories": [size_category(total)],
        "task_categories": ["text-retrieval", "visual-question-answering", "image-to-text"],
        "source_datasets": manifest.get("source_datasets", []),
        "tags": ["m4build", "ravenea", "wikipedia", "culture", "rag"],
    }


def ravenea_body(manifest: Mapping[str, Any], configs: Sequence[ConfigFiles], repo_id: str | None) -> str:
    template = Template(data_path("hub_cards", f"{RAVENEA_CARD}.md").read_text(encoding="utf-8"))
    facts = [f"- {key.replace('_', ' ')}: {value}" for key, value in manifest.get("facts", {}).items()]
    return template.substitute(
        pretty_name=RAVENEA_NAME,
        config_table=config_table(configs),
        repo_hint=repo_id or "path/to/this/folder",
        build_facts="\n".join(facts),
        source_datasets=", ".join(manifest.get("source_datasets", [])) or "local images",
    )


def config_table(configs: Sequence[ConfigFiles]) -> str:
    rows = (f"| `{c.name}` | {c.rows} | `{c.pattern}` |" for c in configs)
    return "\n".join(["| config | rows | files |", "|---|---|---|", *rows])


def build_facts(manifest: Mapping[str, Any]) -> list[str]:
    """The manifest's key facts as a Markdown list: what was searched, from where, with what."""
    settings, counts = manifest["settings"], manifest["counts"]
    versions = manifest.get("versions", {})
    facts = [
        f"- benchmark: {settings['benchmark']}; languages ({len(settings['languages'])}): "
        + ", ".join(settings["languages"]),
        f"- article source: {manifest['source'].get('kind')}; snapshot date: {settings['snapshot_date']}",
        f"- query types: {', '.join(settings['query_types'])}; query languages: "
        + f"{', '.join(settings['query_languages'])}; top-k: {settings['k']}",
        f"- {counts['items']} benchmark items ({counts.get('items_skipped', 0)} skipped) -> {counts['queries']} "
        + f"queries ({counts['unique_queries']} unique) -> {counts['unique_articles']} articles -> "
        + f"{counts['sections']} sections ({counts.get('duplicate_sections_removed', 0)} duplicates removed)",
        f"- failed searches: {manifest['failures']['search']}; failed fetches: {manifest['failures']['fetch']} "
        + f"(listed in `{manifest['failures'].get('file', 'failures.jsonl')}`)",
        f"- built {manifest.get('first_started_at')} to {manifest.get('last_finished_at')} "
        + f"in {manifest.get('attempts', 1)} attempt(s)",
        "- versions: " + ", ".join(f"{name} {versions[name]}" for name in VERSION_KEYS if name in versions),
    ]
    empty = manifest.get("wikis_without_articles") or []
    if empty:
        names = ", ".join(subdomain(wiki) for wiki in empty)
        facts.append(f"- searched but no article retrieved (no config): {names}")
    facts.append("- `manifest.json` records the recipe, every version, count and request.")
    return facts


def index_section(index: Mapping[str, Any] | None, repo_id: str | None) -> str:
    """The card's index chapter: model, shards per language, and how to load them."""
    if not index:
        return "This folder ships no index shards; `m4build index` builds them from the corpus."
    dense = index.get("dense")
    lines = [
        f"Prebuilt retrieval indexes under `indexes/` (format `{index.get('format')}`, manifest "
        + "`indexes/manifest.json` with a SHA-256 for every file)."
    ]
    if dense:
        described = ", ".join(f"{key}: {dense[key]!r}" for key in DENSE_FACTS if key in dense)
        lines.append(f"- dense: `{dense['model']}` ({described})")
    else:
        lines.append("- dense: none (BM25 only)")
    lines += ["", "| language | passages | files | kinds | dense index | size |", "|---|---|---|---|---|---|"]
    for lang, entry in sorted(index.get("languages", {}).items()):
        files = entry.get("files", [])
        kinds = ", ".join(sorted({f.get("kind", "?") for f in files}))
        dense_types = ", ".join(sorted({str(f["index_type"]) for f in files if "index_type" in f})) or "-"
        size = human_bytes(sum(int(f.get("bytes", 0)) for f in files))
        lines.append(
            f"| `{lang}` | {entry.get('passages', 0)} | {len(files)} | {kinds} | {dense_types} | {size} |"
        )
    target = repo_id or "path/to/this/folder"
    lines += [
        "",
        "```python",
        "import m4build",
        f'index = m4build.load_index("{target}", lang="en")  # downloads only the English shards',
        'hits = index.search(["What is ramen?"], k=5)',
        "```",
    ]
    return "\n".join(lines)


def human_bytes(size: int) -> str:
    """Sizes as people read them in a card (``12.5 MB``)."""
    units = ["B", "KB", "MB", "GB", "TB"]
    value, unit = float(size), 0
    while value >= 1024 and unit < len(units) - 1:
        value /= 1024
        unit += 1
    return f"{size} B" if unit == 0 else f"{value:.1f} {units[unit]}"
