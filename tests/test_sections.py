"""The section parser on real Wikipedia HTML in every rendering style we could find.

Fixtures are gzipped verbatim copies (see fixtures/wikipedia/html/ATTRIBUTION.md): MediaWiki 1.43+
``mw-heading`` (en, zh), legacy ``mw-headline`` full pages and ``action=render`` bodies (en, fr, it,
simple, ar, ckb, pl, sr-Cyrl, sr-Latn), Parsoid (ar, bg, cs, de, en, es, fr, it, pt, ckb, pl),
Page Content Service mobile-html (zh) and Wikimedia Enterprise records (de, fr, pt, simple, plus an
NDJSON of three records).
"""

from __future__ import annotations

import gzip
import json
import re
import unicodedata
from functools import cache
from pathlib import Path

import pytest

from m4build.errors import InputFileError
from m4build.records import INFOBOX_HEADING, LEAD_HEADING, Section
from m4build.text.sections import parse_sections

HTML_DIR = Path(__file__).parent / "fixtures" / "wikipedia" / "html"
HTML_FIXTURES = sorted(path.name.removesuffix(".gz") for path in HTML_DIR.glob("*.html.gz"))
ENTERPRISE_JSON = sorted(path.name.removesuffix(".gz") for path in HTML_DIR.glob("*.json.gz"))
SQUIRREL = "mul--squirrel--enterprise.ndjson"
SQUIRREL_WIKIS = ("dewiki", "enwiki", "ruwiki")
PAIRS = (
    "ar--project-ip-masking",
    "fr--talk-le-monde",
    "it--help-desk",
    "pl--village-pump-archive-2018-10",
    "ckb--village-pump-proposals",
)
DISCUSSION_PAGES = ("--talk-", "village-pump", "project-ip-masking", "help-desk")
ARTICLES = [name for name in HTML_FIXTURES if not any(kind in name for kind in DISCUSSION_PAGES)]


def _read(name: str) -> str:
    return gzip.decompress((HTML_DIR / f"{name}.gz").read_bytes()).decode("utf-8")


@cache
def html_of(document: str) -> str:
    """The HTML of a fixture: an HTML file, an Enterprise JSON record, or ``ndjson:<wiki>``."""
    if document.startswith("ndjson:"):
        records = [json.loads(line) for line in _read(SQUIRREL).splitlines()]
        by_wiki = {record["is_part_of"]["identifier"]: record for record in records}
        return by_wiki[document.removeprefix("ndjson:")]["article_body"]["html"]
    if document.endswith(".json"):
        return json.loads(_read(document))["article_body"]["html"]
    return _read(document)


@cache
def sections_of(document: str) -> tuple[Section, ...]:
    return tuple(parse_sections(html_of(document), title=document))


def section(document: str, *path: str) -> Section:
    return next(s for s in sections_of(document) if s.path == path)


def headings(document: str) -> list[str]:
    return [s.heading for s in sections_of(document)]


def infobox(document: str) -> list[str]:
    return section(document, INFOBOX_HEADING).text.splitlines()


ALL_DOCUMENTS = HTML_FIXTURES + ENTERPRISE_JSON + [f"ndjson:{wiki}" for wiki in SQUIRREL_WIKIS]


# --- invariants on every document ------------------------------------------------------------


@pytest.mark.parametrize("document", ALL_DOCUMENTS)
def test_every_document_parses_into_well_formed_sections(document: str) -> None:
    sections = sections_of(document)
    assert sections, "no sections"
    assert [s.index for s in sections] == list(range(len(sections)))
    for s in sections:
        assert s.text.strip(), f"empty section {s.path}"
        assert s.path[-1] == s.heading
        assert unicodedata.is_normalized("NFC", s.text)
        assert "  " not in s.text and "\n\n" not in s.text
        assert all(line == line.strip() for line in s.text.splitlines())
        assert "mw-parser-output" not in s.text, "a stylesheet leaked into the text"


@pytest.mark.parametrize("document", ALL_DOCUMENTS)
def test_lead_comes_first_and_infobox_right_after(document: str) -> None:
    kinds = [s.kind for s in sections_of(document)]
    assert kinds.count("lead") <= 1 and kinds.count("infobox") <= 1
    if "lead" in kinds:
        lead = sections_of(document)[0]
        assert (lead.kind, lead.heading, lead.level, lead.path) == ("lead", LEAD_HEADING, 1, (LEAD_HEADING,))
    if "infobox" in kinds:
        box = sections_of(document)[kinds.index("infobox")]
        assert kinds.index("infobox") == (1 if "lead" in kinds else 0)
        assert (box.heading, box.level, box.path) == (INFOBOX_HEADING, 1, (INFOBOX_HEADING,))
    assert all(s.kind == "section" and 2 <= s.level <= 6 for s in sections_of(document) if s.level > 1)


@pytest.mark.parametrize("document", ARTICLES + ENTERPRISE_JSON)
def test_articles_keep_no_reference_markers_or_edit_links(document: str) -> None:
    for s in sections_of(document):
        assert not re.search(r"\[\d{1,3}\]", s.text), f"reference marker in {s.path}"
        for label in ("[edit]", "modifier le code", "modifica wikitesto", "[编辑]", "[عدل]"):
            assert label not in s.text and label not in s.heading


# --- MediaWiki 1.43+ div.mw-heading (the peer parser collapsed these into one section) ---------


def test_mw_heading_page_is_split_into_its_sections() -> None:
    document = "en--cat--mwheading.html"
    assert len(sections_of(document)) >= 30
    for heading in ("Etymology and naming", "Taxonomy", "Evolution", "Behavior", "See also"):
        assert heading in headings(document)
    assert section(document, "Behavior", "Sociability").level == 3
    assert section(document, "Evolution", "Domestication").text.startswith("It was long thought")


def test_mw_heading_page_in_chinese() -> None:
    document = "zh--cat--mwheading.html"
    assert len(sections_of(document)) >= 50
    assert headings(document)[2:4] == ["分類學", "称呼"]
    assert section(document, "称呼", "西方語言").text.startswith("古希臘文Kattos及拉丁文Catus")
    assert sections_of(document)[0].text.startswith("貓（英語：Cat）通常指家貓")


def test_lead_is_the_text_before_the_first_heading() -> None:
    assert sections_of("en--cat--mwheading.html")[0].text.startswith(
        "The cat (Felis catus), commonly referred to as the domestic cat or house cat, is a small"
    )
    assert sections_of("en--mozilla--legacy.html")[0].text.startswith(
        "Mozilla is a free-software community, created in 1998 by members of Netscape."
    )
    assert sections_of("es--grecia--parsoid.html")[0].text.startswith("Grecia (en griego moderno")
    # the subtitle fr.wiki shows under the title ("AJ Ginnis") is marked noexcerpt and is not the lead
    assert sections_of("fr--alexandros-ioannis-ginnis--parsoid.html")[0].text.startswith(
        "Alexandros Ioannis Ginnis (en grec moderne"
    )


# --- what is dropped ----------------------------------------------------------------------------


def test_hatnotes_and_table_of_contents_are_dropped() -> None:
    text = "\n".join(s.text for s in sections_of("en--cat--mwheading.html"))
    assert "This article is about the species commonly kept as a pet" in html_of("en--cat--mwheading.html")
    assert "This article is about the species" not in text
    assert "Contents" not in headings("en--cat--mwheading.html")
    assert "Вижте пояснителната страница" not in sections_of("bg--kletka--parsoid.html")[0].text


def test_sections_left_empty_by_dropped_reference_lists_are_not_emitted() -> None:
    for heading_id in ('id="Notes"', 'id="References"'):
        assert heading_id in html_of("en--cat--mwheading.html")
    assert "Notes" not in headings("en--cat--mwheading.html")
    assert "References" not in headings("en--cat--mwheading.html")
    assert "External links" in headings("en--cat--mwheading.html")


def test_a_heading_with_only_subsections_stays_in_their_path() -> None:
    assert "Überblick" not in headings("de--matrjoschka--parsoid.html")
    assert section(
        "de--matrjoschka--parsoid.html", "Überblick", "Traditionelle Ausformungen in der Volkskultur"
    )


def test_full_saved_pages_keep_only_the_article_body() -> None:
    for document, chrome in [
        ("simple--china--legacy.html", "Jump to content"),
        ("fr--francois-lapous--legacy.html", "Aller au contenu"),
    ]:
        assert chrome in html_of(document)
        assert all(chrome not in s.text for s in sections_of(document))
    assert headings("fr--francois-lapous--legacy.html")[:3] == [LEAD_HEADING, INFOBOX_HEADING, "Poinçons"]


def test_maths_is_kept_once_as_tex() -> None:
    lead = sections_of("en--hermitian-matrix--legacy.html")[0].text
    formula = r"A{\text{ Hermitian}}\quad \iff \quad A=A^{\mathsf {H}}"
    assert lead.count(formula) == 1
    assert "displaystyle" not in lead
    assert any("E=mc^{2}" in s.text for s in sections_of("simple--albert-einstein--enterprise.json"))


def test_display_maths_stands_on_its_own_line() -> None:
    text = section(
        "en--hermitian-matrix--legacy.html", "Alternative characterizations", "Equality with the adjoint"
    )
    assert r"\langle w,Av\rangle =\langle Aw,v\rangle ," in text.text.splitlines()


# --- what is kept -------------------------------------------------------------------------------


def test_lists_become_prefixed_lines() -> None:
    assert "- Aging in cats" in section("en--cat--mwheading.html", "See also").text.splitlines()
    assert any(
        line.startswith("1. Read over the help page")
        for s in sections_of("sr-latn--village-pump-tech-archive-35--legacy.html")
        for line in s.text.splitlines()
    )


def test_definition_list_terms_are_lines_of_their_own() -> None:
    organelles = section("bg--kletka--parsoid.html", "Субклетъчни компоненти", "Клетъчни органели").text
    assert "Клетъчното ядро – информационният център на клетката" in organelles.splitlines()


# --- infoboxes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "line"),
    [
        ("en--cat--mwheading.html", "Kingdom: Animalia"),
        ("zh--cat--mwheading.html", "界: 动物界 Animalia"),
        ("en--mozilla--legacy.html", "Founded: February 28, 1998"),
        ("simple--china--legacy.html", "Capital: Beijing"),
        ("en--matryoshka-doll--parsoid.html", "Country: Russia"),
        ("es--grecia--parsoid.html", "Moneda: Euro (€, EUR)"),
        ("fr--alexandros-ioannis-ginnis--parsoid.html", "Lieu de naissance: Athènes"),  # infobox_v2
        ("fr--rougequeue-de-hodgson--parsoid.html", "Famille: Muscicapidae"),  # infobox_v3 on a div
        ("it--armonium--legacy.html", "Invenzione: XIX secolo"),  # sinottico
        ("pt--o--parsoid.html", "Código Morse: –––"),
        ("zh--china--other.html", "简化字: 中国"),  # PCS hides it with display:none
        ("pt--portugal--enterprise.json", "Cód. ISO: PRT"),
        ("simple--albert-einstein--enterprise.json", "Doctoral advisor: Alfred Kleiner"),
        ("ndjson:enwiki", "Order: Rodentia"),
        ("ndjson:ruwiki", "Автор: Альберто Демичелис"),
    ],
)
def test_infobox_becomes_key_value_lines(document: str, line: str) -> None:
    assert line in infobox(document)
    assert all(line not in s.text for s in sections_of(document) if s.kind != "infobox")


def test_infobox_sub_rows_keep_their_group_label() -> None:
    lines = infobox("simple--china--legacy.html")
    assert "Area • Total: 9,596,961 km2 (3,705,407 sq mi) (3rd/4th)" in lines
    assert "Government • Premier: Li Qiang" in lines


def test_infobox_header_with_a_value_row_below_it() -> None:
    lines = infobox("ndjson:enwiki")
    assert "Type genus: Sciurus, Linnaeus, 1758" in lines
    assert not any("Various members of the family" in line for line in lines)  # a caption


def test_parsoid_infobox_found_by_its_template_when_unclassed() -> None:
    html = html_of("en--matryoshka-doll--parsoid.html")
    assert html.count('<table class="infobox"') == 1
    unclassed = html.replace('<table class="infobox"', "<table", 1)
    box = next(s for s in parse_sections(unclassed) if s.kind == "infobox")
    assert "Country: Russia" in box.text.splitlines()


def test_sister_project_box_with_an_infobox_class_is_not_the_infobox() -> None:
    assert 'class="infobox noprint"' in html_of("pt--portugal--enterprise.json")
    assert not any("Wikiquote" in line for line in infobox("pt--portugal--enterprise.json"))


# --- right-to-left and CJK ----------------------------------------------------------------------


def test_right_to_left_pages_parse() -> None:
    assert headings("ar--mathematics--parsoid.html")[1:3] == ["التاريخ", "الرياضيات في علوم المادة"]
    assert sections_of("ar--mathematics--parsoid.html")[0].text.startswith("الرياضيات علم عبارة عن مفاهيم")
    ckb = sections_of("ckb--village-pump-proposals--legacy.html")
    assert len(ckb) >= 30 and ckb[1].heading == "ئاسانکاری"


def test_page_content_service_mobile_html() -> None:
    document = "zh--china--other.html"
    assert sections_of(document)[0].text.startswith("“中国”是位于东亚的国家或地理区域")
    assert section(document, "历史", "上古史").level == 3
    assert "名称" in headings(document)
    assert all("Quick facts" not in s.text for s in sections_of(document))


def test_serbian_in_both_scripts_has_parallel_sections() -> None:
    cyrillic = sections_of("sr-cyrl--village-pump-tech-archive-35--legacy.html")
    latin = sections_of("sr-latn--village-pump-tech-archive-35--legacy.html")
    assert [s.level for s in cyrillic] == [s.level for s in latin]
    assert "Површина: 467.631 km2" in infobox("sr-cyrl--village-pump-tech-archive-35--legacy.html")
    assert "Površina: 467.631 km2" in infobox("sr-latn--village-pump-tech-archive-35--legacy.html")


# --- the same revision from the legacy parser and from Parsoid ----------------------------------

TIP_OF_THE_DAY = "Se vuoi provare a fare modifiche ma hai paura di combinare qualche guaio"


@pytest.mark.parametrize("slug", PAIRS)
def test_legacy_and_parsoid_html_of_one_revision_agree(slug: str) -> None:
    legacy = sections_of(f"{slug}--legacy.html")
    parsoid = sections_of(f"{slug}--parsoid.html")
    assert len(legacy) >= 20
    assert [(s.path, s.level, s.kind) for s in legacy] == [(s.path, s.level, s.kind) for s in parsoid]
    for old, new in zip(legacy, parsoid, strict=True):
        if slug == "it--help-desk" and old.kind == "lead":
            # The lead transcludes it.wiki's "Suggerimento del giorno", a tip that rotates at render
            # time: the two files were rendered at different times and show different tips.
            assert TIP_OF_THE_DAY in old.text and TIP_OF_THE_DAY not in new.text
            assert _without_line(old.text, 1) == _without_line(new.text, 1)
        else:
            assert old.text == new.text, old.path


def _without_line(text: str, number: int) -> list[str]:
    lines = text.splitlines()
    return lines[:number] + lines[number + 1 :]


# --- Enterprise records -------------------------------------------------------------------------


def test_enterprise_records_parse() -> None:
    einstein = sections_of("de--albert-einstein--enterprise.json")
    assert len(einstein) >= 40
    assert section(
        "de--albert-einstein--enterprise.json", "Leben", "Kindheit und Jugend", "Vorfahren und Elternhaus"
    )
    assert einstein[0].text.startswith("Albert Einstein (* 14. März 1879 in Ulm")
    assert "Sport: Ski alpin" in infobox("fr--alexandros-ioannis-ginnis--enterprise.json")
    assert "Governo • Presidente: Marcelo Rebelo de Sousa" in infobox("pt--portugal--enterprise.json")


def test_enterprise_ndjson_records_parse() -> None:
    assert [s.kind for s in sections_of("ndjson:dewiki")] == ["lead"]  # a disambiguation page
    assert sections_of("ndjson:dewiki")[0].text.startswith("Squirrel (englisch für Hörnchen) steht für:")
    assert {"Etymology", "Characteristics", "Behavior"} <= set(headings("ndjson:enwiki"))
    assert section("ndjson:enwiki", "Behavior", "Feeding").level == 3
    assert sections_of("ndjson:ruwiki")[0].text.startswith("Squirrel (с англ. — «белка»)")


# --- Parsoid language-variant markup and bad input ------------------------------------------------


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        ('{"disabled":{"t":"bar baz"}}', "foo bar baz quux"),
        ('{"twoway":[{"l":"zh-cn","t":"博客"},{"l":"zh-tw","t":"部落格"}]}', "foo 博客 quux"),
        ('{"disabled":{"t":"<b>bold</b> text"}}', "foo bold text quux"),
    ],
)
def test_empty_parsoid_language_variant_takes_its_text(variant: str, expected: str) -> None:
    # The markup of Parsoid's DOM spec for -{bar baz}- and -{zh-cn:博客; zh-tw:部落格;}-.
    html = f"<p>foo <span typeof=\"mw:LanguageVariant\" data-mw-variant='{variant}'></span> quux</p>"
    assert parse_sections(html)[0].text == expected


def test_blank_html_has_no_sections() -> None:
    assert parse_sections(" \n") == []


def test_html_without_any_element_is_refused_with_the_page_named() -> None:
    with pytest.raises(InputFileError, match="'Grecia'"):
        parse_sections("<!-- nothing rendered -->", title="Grecia")
