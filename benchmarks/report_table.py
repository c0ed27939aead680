"""The plain-text table every benchmark prints its results in: first column left, the rest right."""

from __future__ import annotations


def table(title: str, header: list[str], rows: list[list[object]]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    line = "  ".join(("{:<%d}" if i == 0 else "{:>%d}") % w for i, w in enumerate(widths))
    print(f"\n{title}")
    print(line.format(*header))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line.format(*[str(cell) for cell in row]))
