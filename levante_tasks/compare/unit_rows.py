"""The columns every per-unit output row starts with, shared by the scoring units (compare.task) and the orders
units (compare.order_units): model, task, the unit's locale, the children's language."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import pandas as pd


class NamedUnits(Protocol):
    """Units by position: their names and each one's locale code."""

    names: list[str]
    locales: list[str]


def front(units: NamedUnits, task: str, language: str, rows: np.ndarray | None = None) -> pd.DataFrame:
    """model, task, the unit's locale, the children's language (`rows`: unit positions, one per output row; default
    one row per unit)."""
    at = np.arange(len(units.names)) if rows is None else np.asarray(rows, dtype=int)
    if not len(at):  # no rows: the columns typed by pandas' inference, as every table was built before
        return pd.DataFrame({"model": np.asarray(units.names, dtype=object)[at], "task": task,
                             "locale": np.asarray(units.locales, dtype=object)[at], "children_language": language})
    same = np.zeros(len(at), dtype=int)
    return pd.DataFrame({"model": text_at(units.names, at), "task": text_at([task], same),
                         "locale": text_at(units.locales, at), "children_language": text_at([language], same)})


def text_at(values: list[str], at: np.ndarray) -> pd.Series:
    """`values[at]` as a text column, its dtype inferred from the few distinct values and then taken (inferring it
    from a long object array converts every row's Python string: the main cost of a 400k-row table)."""
    return pd.Series(np.asarray(values, dtype=object)).take(at).reset_index(drop=True)


def by_unit(table: pd.DataFrame, units: NamedUnits, task: str, language: str) -> pd.DataFrame:
    """A table keyed by unit position (`unit` column) with `front`'s columns first."""
    head = front(units, task, language, table["unit"].to_numpy(int))
    return pd.concat([head, table.drop(columns="unit").reset_index(drop=True)], axis=1)


def children_bins(children: pd.DataFrame) -> pd.DataFrame:
    """Children per ability bin with their mean age (descriptive: kl_bins.csv, never an age readout)."""
    frame = children.dropna(subset=["theta"])
    frame = frame.assign(bin_low=np.floor(frame["theta"].to_numpy(float)).astype(int))
    return frame.groupby("bin_low", as_index=False).agg(n_children=("run_id", "size"), mean_child_age=("age", "mean"))
