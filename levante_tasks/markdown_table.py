"""Markdown tables as every report and generated README writes them: `| a | b |`, `|---|---|`, one row a line.

tabulate lays the table out; its pipe formats pad every column to its widest cell and size the rule to it, so
the format here keeps cells as given (no alignment, no number parsing) and the rule at `---` per column. (A cell
that is only "\x01" in the first two columns is tabulate's separating-line mark; no report writes one.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tabulate import DataRow, TableFormat, tabulate

_ROW = DataRow("|", "|", "|")
_FORMAT = TableFormat(lineabove=None, linebelowheader=lambda widths, _aligns: "|" + "---|" * len(widths),
                      linebetweenrows=None, linebelow=None, headerrow=_ROW, datarow=_ROW, padding=1,
                      with_header_hide=None)


def markdown_table(header: Sequence[object], rows: Iterable[Sequence[object]]) -> str:
    """The table's lines joined by newlines (no newline at the end); cells are written as `str` gives them."""
    return tabulate([[str(cell) for cell in row] for row in rows], headers=[str(cell) for cell in header],
                    tablefmt=_FORMAT, disable_numparse=True, stralign=None, numalign=None, preserve_whitespace=True)
