"""Wikipedia article HTML to sections, whatever renderer produced it.

The peer code found sections by looking for ``<h2><span class="mw-headline">``; MediaWiki 1.43+
wraps headings in ``<div class="mw-heading">`` instead, so every current page collapsed into one
section. This parser does not depend on any wrapper: it walks the content in document order and
lets every ``h2``..``h6`` start a section, which is the one thing all renderings agree on:

- MediaWiki 1.43+ ``div.mw-heading`` (also inside MobileFrontend ``section.mf-section-N``),
- the legacy parser's ``span.mw-headline``, as a full saved page (only ``#mw-content-text`` /
  ``.mw-parser-output`` is read, never the skin) or as an ``action=render`` body,
- Parsoid / REST ``page/html`` and Wikimedia Enterprise ``article_body.html``, whose nested
  ``<section data-mw-section-id>`` elements are containers only,
- Page Content Service ``mobile-html`` (``pcs-*`` wrappers).

What is kept: paragraphs, lists (``"- item"`` or ``"1. item"`` lines), definition lists (one line per
``dt``/``dd``), blockquotes, and the infobox, read into its own key-value section. Other tables are
dropped: outside infoboxes they are data grids whose flattened text reads as noise. What is dropped
as non-content is decided in :mod:`m4build.text.markup`. Sections left without text (a "References"
section once its list is gone, a heading with only subsections below it) are not emitted.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

from lxml import etree

from m4build.errors import InputFileError
from m4build.records import INFOBOX_HEADING, LEAD_HEADING, Section
from m4build.text.infobox import infobox_lines, is_infobox, is_infobox_transclusion
from m4build.text.markup import Element, class_tokens, inline_text, is_dropped, replacement_text

HEADING_LEVELS = {"h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}

BLOCK_TAGS = frozenset(
    {
        "p", "div", "section", "article", "main", "aside", "blockquote", "center", "pre", "dl",
        "dt", "dd", "h1", "address", "details", "summary", "hr",
    }
)  # fmt: skip


def parse_sections(html: str, *, title: str = "") -> list[Section]:
    """Split one article's HTML into its lead, infobox and heading sections.

    ``title`` only names the page in the error raised for HTML that holds no document at all, so
    that a garbled API answer can be traced to its page. Blank input yields no sections.
    Sections are numbered 0..n-1 in document order; the infobox, wherever it sits in the page,
    comes right after the lead.
    """
    if not html.strip():
        return []
    reader = _SectionReader()
    reader.read(_content_root(_parse_document(html, title)))
    return reader.sections()


def _parse_document(html: str, title: str) -> Element:
    # Bytes plus an explicit encoding: fragments carry no <meta charset>, and lxml refuses str
    # input that starts with an XML declaration. The parser recovers from any broken markup; it
    # gives up (returns None) only when there is no element at all, e.g. a lone comment.
    root = etree.fromstring(html.encode("utf-8", "replace"), etree.HTMLParser(encoding="utf-8"))
    if root is None:
        page = repr(title) if title else "a page"
        raise InputFileError(
            f"The HTML of {page} holds no element, only text-free markup: {html[:80]!r}.",
            hint="Fetch the page again; if it keeps failing, record it as a failure.",
        )
    return root


def _content_root(root: Element) -> Element:
    """The article body: never the skin, the talk-page header or the site notice around it.

    Parsoid and Enterprise documents mark ``<body>`` itself as ``.mw-parser-output``; saved pages
    hold it inside ``#mw-content-text`` (pages saved before 2017 have no ``.mw-parser-output``);
    ``action=render`` and ``action=parse`` fragments start with it. A depth-first search that stops
    at the first hit is much cheaper here than an XPath over the whole tree.
    """
    body = root.find("body")
    top = root if body is None else body
    if "mw-parser-output" in class_tokens(top):
        return top
    found = _find_content(top)
    if found is None:
        return top
    if found.get("id") == "mw-content-text":
        inner = _find_content(found)
        return found if inner is None else inner
    return found


def _find_content(el: Element) -> Element | None:
    for child in el:
        if isinstance(child.tag, str):
            if child.get("id") == "mw-content-text" or "mw-parser-output" in class_tokens(child):
                return child
            found = _find_content(child)
            if found is not None:
                return found
    return None


@dataclass
class _Draft:
    heading: str
    level: int
    path: tuple[str, ...]
    kind: str
    lines: list[str] = field(default_factory=list)


class _SectionReader:
    """One pass over the content tree, appending text lines to the section being read."""

    def __init__(self) -> None:
        self._infobox_abouts: set[str] = set()
        self._drafts = [_Draft(LEAD_HEADING, 1, (LEAD_HEADING,), "lead")]
        self._headings: list[tuple[int, str]] = []
        self._infobox: list[str] = []
        self._buffer: list[str] = []
        self._prefix = ""

    def read(self, root: Element) -> None:
        self._walk(root)
        self._end_line()

    def sections(self) -> list[Section]:
        """The drafts with text, as numbered sections; the infobox goes right after the lead."""
        lead, *rest = self._drafts
        drafts = [lead]
        if self._infobox:
            drafts.append(_Draft(INFOBOX_HEADING, 1, (INFOBOX_HEADING,), "infobox", self._infobox))
        drafts.extend(rest)
        kept = [draft for draft in drafts if draft.lines]
        return [
            Section(
                index=index,
                heading=draft.heading,
                level=draft.level,
                path=draft.path,
                text=unicodedata.normalize("NFC", "\n".join(draft.lines)),
                kind=draft.kind,
            )
            for index, draft in enumerate(kept)
        ]

    def _walk(self, el: Element) -> None:
        if el.text:
            self._buffer.append(el.text)
        for child in el:
            if isinstance(child.tag, str):
                self._visit(child, child.tag)
            if child.tail:
                self._buffer.append(child.tail)

    def _visit(self, el: Element, tag: str) -> None:
        about = el.get("about")
        if about and is_infobox_transclusion(el):
            self._infobox_abouts.add(about)
        tokens = class_tokens(el)
        if is_infobox(el, tag, tokens, self._infobox_abouts):
            self._infobox.extend(infobox_lines(el))
        elif is_dropped(el, tag, tokens) or tag == "table":
            return
        elif tag in HEADING_LEVELS:
            self._start_section(el, HEADING_LEVELS[tag])
        elif tag == "ul" or tag == "ol":
            self._visit_list(el, ordered=tag == "ol")
        elif tag == "br":
            self._end_line()
        elif tag in BLOCK_TAGS or tag == "li":
            self._end_line()
            self._read_content(el, tag, tokens)
            self._end_line()
        else:
            self._read_content(el, tag, tokens)

    def _read_content(self, el: Element, tag: str, tokens: list[str]) -> None:
        replacement = replacement_text(el, tag, tokens)
        if replacement is None:
            self._walk(el)
        else:
            self._buffer.append(replacement)

    def _visit_list(self, el: Element, *, ordered: bool) -> None:
        self._end_line()
        number = 1
        for child in el:
            tag = child.tag
            if tag == "li" and not is_dropped(child, tag, class_tokens(child)):
                self._read_item(child, f"{number}. " if ordered else "- ")
                number += 1
            elif isinstance(tag, str):
                self._visit(child, tag)
            if child.tail:
                self._buffer.append(child.tail)
        self._end_line()

    def _read_item(self, item: Element, prefix: str) -> None:
        outer = self._prefix
        self._end_line()
        self._prefix = prefix
        self._walk(item)
        self._end_line()
        self._prefix = outer

    def _start_section(self, heading_el: Element, level: int) -> None:
        self._end_line()
        heading = inline_text(heading_el)
        if not heading:
            return
        while self._headings and self._headings[-1][0] >= level:
            self._headings.pop()
        self._headings.append((level, heading))
        path = tuple(text for _, text in self._headings)
        self._drafts.append(_Draft(heading, level, path, "section"))

    def _end_line(self) -> None:
        if not self._buffer:
            return
        line = " ".join("".join(self._buffer).split())
        self._buffer.clear()
        if line:
            self._drafts[-1].lines.append(self._prefix + line)
