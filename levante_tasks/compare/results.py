"""Settings of a comparison run and the tables, summaries and counted exclusions it collects."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

from levante_tasks.compare.conventions import CALIBRATION_TOLERANCE
from levante_tasks.compare.replicates import TOLERANCE


@dataclass
class Settings:
    """Tunable parameters of a comparison run (all recorded in comparison.json)."""

    min_n: int = 10
    n_boot: int = 2000  # bootstrap resamples of the age-equivalent interval (the correlations use Fisher z)
    n_perm: int = 2000  # permutations of the better-than-uniform test
    seed: int = 0
    level: float = 0.95
    plots: bool = True
    calibration_tolerance: float = CALIBRATION_TOLERANCE
    across_languages: bool = False  # also compare each model run with the children of every other language
    orders_tolerance: float = TOLERANCE  # nats: an orders unit's replicate half-width that is enough (orders_enough)


@dataclass
class Results:
    """Tidy tables and nested summaries collected while comparing."""

    tables: dict[str, list[pd.DataFrame]] = field(default_factory=dict)
    exclusions: list[dict[str, object]] = field(default_factory=list)
    tasks: dict[str, dict[str, object]] = field(default_factory=dict)

    def add(self, name: str, table: pd.DataFrame) -> None:
        """Append rows to the named output table."""
        self.tables.setdefault(name, []).append(table)

    def count(self, counts: Counter, task: str = "", model: str = "", language: str = "") -> None:
        """Record counted exclusions for a scope (global, task, task x children's language, or model x task x
        children's language)."""
        for reason, n in sorted(counts.items()):
            if n:
                self.exclusions.append({"task": task, "children_language": language, "model": model,
                                        "reason": reason, "count": int(n)})

    def table(self, name: str) -> pd.DataFrame:
        """One concatenated output table; with no rows it keeps the columns of what was added (a header)."""
        added = self.tables.get(name, [])
        parts = [p for p in added if not p.empty]
        if parts:
            return pd.concat(parts, ignore_index=True)
        return pd.DataFrame(columns=added[0].columns) if added else pd.DataFrame()
