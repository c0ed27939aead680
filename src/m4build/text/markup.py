"""What counts as article content in Wikipedia HTML, shared by the section and the infobox readers.

Every rendering we read (legacy parser, MediaWiki 1.43+ ``div.mw-heading``, Parsoid / REST
``page/html``, Page Content Service ``mobile-html``, Wikimedia Enterprise ``article_body.html``)
marks its non-content in the same few ways: a tag, a class, an id, an ARIA role, a Parsoid
``typeof`` or an inline ``display:none``. One predicate over those attributes, asked once per element
while the tree is walked, is much cheaper than a series of CSS/XPath removals and never mutates the
tree.

Decisions (kept identical across renderings, so that one revision parses the same whichever way it
was fetched):

- dropped: references (markers and lists) and the ``[1]`` markers of bare external links (the
  legacy parser writes them out, Parsoid leaves them to CSS), navboxes and sidebars, hatnotes,
  maintenance and metadata boxes (``ambox``, ``metadata``, ``noprint``, sister-project boxes), text
  editors mark ``noexcerpt``, edit links, the table of contents, coordinates, scripts, styles,
  ``<link>``/``<meta>``, empty Parsoid paragraphs, the zh ``noteTA`` conversion box, and anything
  hidden with ``display:none``;
- dropped: images with their captions (``figure``, legacy ``div.thumb``, galleries). Captions are
  short, repeat the prose around them, and are rendered so differently by the legacy parser and by
  Parsoid that keeping them would make the two renderings of one revision disagree;
- maths is kept once, as its TeX source (the ``alttext`` of ``<math>``, else the fallback image's
  ``alt``), with the ``{\\displaystyle ...}`` wrapper removed. TeX keeps structure (powers,
  fractions) that the flattened MathML text loses, and both renderings carry the same TeX.
"""

from __future__ import annotations

import json
import re

from lxml import etree

Element = etree._Element
"""An element of a tree parsed with :class:`lxml.etree.HTMLParser` (no ``lxml.html`` class lookup:
the per-element Python lookup it adds costs more than the rest of the walk)."""

DROP_TAGS = frozenset(
    {
        "script", "style", "link", "meta", "noscript", "template", "header", "footer", "nav",
        "figure", "figure-inline", "img", "picture", "audio", "video", "source", "track", "map",
        "area", "svg", "canvas", "iframe", "object", "embed", "button", "input", "select",
        "textarea",
    }
)  # fmt: skip

DROP_CLASSES = frozenset(
    {
        # references: inline markers, lists and their wrappers
        "reference", "mw-ref", "references", "reflist", "mw-references-wrap", "refbegin",
        "mw-cite-backlink", "autonumber",
        # navigation
        "navbox", "navbox-styles", "vertical-navbox", "sidebar", "navigation-box", "portal",
        "portalbox", "portal-bar", "authority-control", "CdA", "bandeau-portail", "catlinks",
        "printfooter", "mw-jump-link", "toc", "mw-indicators",
        # notices about the page rather than its subject
        "hatnote", "dablink", "rellink", "othermeaning-box", "navigation-not-searchable",
        "metadata", "noprint",
        "ambox", "ombox", "tmbox", "fmbox", "cmbox", "imbox", "mbox-small", "mbox-small-left",
        "sistersitebox", "shortcutbox", "noteTA",
        # marked by editors as not to be excerpted (fr subtitles under the title, audio buttons);
        # Wikimedia's own TextExtracts leaves these out too
        "noexcerpt",
        # edit links (legacy, mw-heading, Page Content Service)
        "mw-editsection", "pcs_edit_section_link_container",
        # images, galleries and the maths fallback image
        "thumb", "gallery", "mwe-math-fallback-image-inline", "mwe-math-fallback-image-display",
        # empty or layout-only pieces
        "mw-empty-elt", "sortkey", "geo-default", "geo-nondefault", "geo-multi-punct",
        "coordinates", "pcs-collapse-table-collapsed_container",
        "pcs-collapse-table-collapsed_bottom",
    }
)  # fmt: skip

DROP_IDS = frozenset({"toc", "coordinates", "catlinks"})
DROP_ROLES = frozenset({"note", "navigation"})

_HIDDEN = re.compile(r"display\s*:\s*none")
_DISPLAYSTYLE = re.compile(r"^\{\\(?:displaystyle|textstyle)\s*(.*)\}$", re.DOTALL)

BREAK = "\x00"
"""Marks a line break inside collected text; libxml2 never yields NUL, so it cannot collide."""

_JOINING_PUNCTUATION = (":", "：", ",", "，", ";", "、")

BREAK_TAGS = frozenset({"br", "p", "div", "li", "dd", "dt", "tr", "ul", "ol", "dl", "blockquote"})


def class_tokens(el: Element) -> list[str]:
    """The element's class names (an empty list when it has none)."""
    classes = el.get("class")
    return classes.split() if classes else []


def is_dropped(el: Element, tag: str, tokens: list[str]) -> bool:
    """True when ``el`` (with its subtree) is not article content."""
    if tag in DROP_TAGS or not DROP_CLASSES.isdisjoint(tokens):
        return True
    if el.get("id") in DROP_IDS or el.get("role") in DROP_ROLES:
        return True
    typeof = el.get("typeof")
    if typeof and "mw:Extension/references" in typeof:
        return True
    style = el.get("style")
    return bool(style) and "none" in style and _HIDDEN.search(style) is not None


def replacement_text(el: Element, tag: str, tokens: list[str]) -> str | None:
    """Text that stands for the whole element (maths, Parsoid language variants), else None."""
    if tag == "math" or "mwe-math-element" in tokens:
        return tex_source(el)
    typeof = el.get("typeof")
    if typeof and "mw:LanguageVariant" in typeof and not len(el) and not (el.text or "").strip():
        return language_variant_text(el.get("data-mw-variant") or "{}")
    return None


def tex_source(el: Element) -> str:
    """The TeX of a formula, without the ``{\\displaystyle ...}`` wrapper the renderer adds."""
    math = el if el.tag == "math" else next(el.iter("math"), None)
    tex = math.get("alttext") if math is not None else None
    if not tex:
        image = next(el.iter("img"), None)
        tex = image.get("alt", "") if image is not None else ""
    tex = tex.strip()
    match = _DISPLAYSTYLE.match(tex)
    return match.group(1).strip() if match else tex


def language_variant_text(data: str) -> str:
    """Text of an empty Parsoid ``mw:LanguageVariant`` (``-{ }-``) element.

    Parsoid leaves these elements empty and keeps the text in ``data-mw-variant`` for a later
    variant-conversion pass; the legacy parser and the Page Content Service have already converted.
    Without a reader's variant to honour we take the unconverted text, or the first variant listed,
    so that the words are at least present.
    """
    try:
        variant = json.loads(data)
    except ValueError:
        return ""
    for key in ("disabled", "name", "filter"):
        if isinstance(variant.get(key), dict):
            return _fragment_text(variant[key].get("t", ""))
    for key in ("twoway", "oneway"):
        choices = variant.get(key)
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            return _fragment_text(choices[0].get("t", ""))
    return ""


def _fragment_text(fragment: str) -> str:
    if "<" not in fragment:
        return fragment
    return "".join(etree.fromstring(f"<span>{fragment}</span>", etree.HTMLParser()).itertext())


def inline_text(el: Element, separator: str = " ") -> str:
    """The content text of ``el`` on one line; block boundaries and ``<br>`` become ``separator``.

    Used for headings and infobox cells, where the structure inside the element is not worth
    keeping but a boundary must not glue two words together ("Lisbon<br>Porto").
    """
    parts: list[str] = []
    _collect(el, parts)
    text = ""
    for piece in "".join(parts).split(BREAK):
        piece = " ".join(piece.split())
        if not piece:
            continue
        if text:  # "Composite:" then "Reeds" reads "Composite: Reeds", not "Composite:, Reeds"
            text += " " if text.endswith(_JOINING_PUNCTUATION) else separator
        text += piece
    return text


def _collect(el: Element, parts: list[str]) -> None:
    if el.text:
        parts.append(el.text)
    for child in el:
        if isinstance(child.tag, str):
            _collect_element(child, child.tag, parts)
        if child.tail:
            parts.append(child.tail)


def _collect_element(el: Element, tag: str, parts: list[str]) -> None:
    tokens = class_tokens(el)
    if is_dropped(el, tag, tokens):
        return
    replacement = replacement_text(el, tag, tokens)
    if replacement is not None:
        parts.append(replacement)
        return
    boundary = tag in BREAK_TAGS
    if boundary:
        parts.append(BREAK)
    _collect(el, parts)
    if boundary:
        parts.append(BREAK)
