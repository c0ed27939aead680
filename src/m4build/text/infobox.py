"""Infobox detection and its reading as "Key: Value" lines.

The infobox holds exactly the facts benchmark questions ask about (origin, ingredients, capital), in
a table that a prose extractor would either drop or flatten into noise. Reading it row by row keeps
each fact whole: a row with a label and a value becomes ``"Label: Value"``; rows with a single cell
(the title, images, captions, group headers such as "Area") are not emitted, but a group header is
kept as context for the indented rows below it (``"Area • Total: 92,230 km2"``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from m4build.text.markup import Element, class_tokens, inline_text, is_dropped

INFOBOX_CLASSES = frozenset({"infobox", "infobox_v2", "infobox_v3", "sinottico", "taxobox", "taxobox_v3"})
"""Infobox classes: most wikis use ``infobox`` (en, es, pt, ru, zh, simple, ...); fr uses
``infobox_v2`` and, on a ``div``, ``infobox_v3``/``taxobox_v3``; it uses ``sinottico``."""

NOT_INFOBOX_CLASSES = frozenset({"noprint", "navbox", "metadata", "sistersitebox"})
"""Boxes that borrow the ``infobox`` class for navigation, e.g. pt's sister-project box."""

_INFOBOX_TEMPLATE = re.compile(
    r'"target":\{"wt":"\s*(?:infobox|taxobox|info/|ficha de|карточка)',
    re.IGNORECASE,
)
_SUB_KEY_MARKS = frozenset("•·-–—")
_KEY_END = ":：\u00a0 "


def is_infobox_transclusion(el: Element) -> bool:
    """True when ``el`` carries the ``data-mw`` of a Parsoid transclusion of an infobox template.

    Parsoid names the template behind each piece of output (``typeof="mw:Transclusion"``, the
    first element of the group carrying ``data-mw``, the others sharing its ``about`` id), so an
    infobox table is recognisable even when its wiki gives it no infobox class.
    """
    typeof = el.get("typeof")
    data = el.get("data-mw")
    return bool(typeof and data and "mw:Transclusion" in typeof and _INFOBOX_TEMPLATE.search(data))


def is_infobox(el: Element, tag: str, tokens: list[str], infobox_abouts: set[str]) -> bool:
    """True when ``el`` is an infobox: by class, or as a table from an infobox template (its
    ``about`` id is in ``infobox_abouts``)."""
    if tag != "table" and tag != "div":
        return False
    if not INFOBOX_CLASSES.isdisjoint(tokens):
        return NOT_INFOBOX_CLASSES.isdisjoint(tokens)
    return tag == "table" and el.get("about") in infobox_abouts


def infobox_lines(box: Element) -> list[str]:
    """The infobox's rows as lines, in order.

    Two cells are a label and a value (``"Capital: Lisbon"``); a lone header cell directly followed
    by a lone value cell without an image is one too (``"Type genus: Sciurus"``); wider rows keep
    their first cell as the label when it is a header, else read as a grid line (``"a | b | c"``,
    e.g. a gallery of captions). Other lone cells (title, images, captions) are not emitted.
    """
    reader = _RowReader()
    for row in _rows(box):
        reader.read([(cell, text) for cell in row if (text := _cell_text(cell))])
    return reader.lines


class _RowReader:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self._group = ""  # the last label: context for indented rows ("Area" for "• Total")
        self._header = ""  # a lone header cell, if the row just read was one

    def read(self, cells: list[tuple[Element, str]]) -> None:
        pending, self._header = self._header, ""
        if len(cells) == 1:
            self._read_lone_cell(*cells[0], pending)
        elif len(cells) > 2 and cells[0][0].tag != "th":
            self.lines.append(" | ".join(text for _, text in cells))
        elif cells:
            self._read_labelled(cells[0][1], [text for _, text in cells[1:]])

    def _read_lone_cell(self, cell: Element, text: str, pending: str) -> None:
        if cell.tag == "th":
            self._header = self._group = text
        elif pending and cell.find(".//img") is None:  # an image's caption is no value
            self.lines.append(f"{pending}: {text}")

    def _read_labelled(self, label: str, values: list[str]) -> None:
        key = label.rstrip(_KEY_END) or label
        if key[:1] in _SUB_KEY_MARKS and self._group:
            key = f"{self._group} {key}"
        else:
            self._group = key
        self.lines.append(f"{key}: {' | '.join(values)}")


def _cell_text(cell: Element) -> str:
    tag = cell.tag
    if (tag != "th" and tag != "td") or is_dropped(cell, tag, class_tokens(cell)):
        return ""
    return inline_text(cell, ", ")


def _rows(el: Element) -> Iterator[Element]:
    """Table rows under ``el`` in document order, descending into nested tables, skipping
    non-content (edit-link rows, hidden rows)."""
    for child in el:
        tag = child.tag
        if not isinstance(tag, str) or is_dropped(child, tag, class_tokens(child)):
            continue
        if tag == "tr" and child.find(".//table") is None:
            yield child
        else:
            yield from _rows(child)
