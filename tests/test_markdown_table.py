"""The Markdown table writer (tabulate with our format) writes exactly `| a | b |`, `|---|---|`, one row a line:
cells as given, never padded, re-aligned or re-formatted as numbers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from levante_tasks.markdown_table import markdown_table

# Not \x01: tabulate reads a first- or second-column cell that is only \x01 as its separating-line mark (no report
# writes control characters); not newlines: a table cell is one line.
CELL = st.one_of(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\x01")),
                 st.sampled_from(["1.50", "1e5", "007", "-0.0", "nan", "None", "  lead", "trail  ", "", "a|b"]))


def by_hand(header: list[str], rows: list[list[str]]) -> str:
    """The format every report wrote before tabulate did it."""
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                      *("| " + " | ".join(row) + " |" for row in rows)])


@given(st.integers(1, 5).flatmap(lambda n: st.tuples(st.lists(CELL, min_size=n, max_size=n),
                                                      st.lists(st.lists(CELL, min_size=n, max_size=n), max_size=4))))
def test_table_is_the_hand_written_format(table: tuple[list[str], list[list[str]]]) -> None:
    header, rows = table
    assert markdown_table(header, rows) == by_hand(header, rows)


def test_cells_are_written_as_str_writes_them() -> None:
    assert markdown_table(["task", "items"], [("vocab", 12), ("trog", 1.5)]) == (
        "| task | items |\n|---|---|\n| vocab | 12 |\n| trog | 1.5 |")
    assert markdown_table(["a"], []) == "| a |\n|---|"
