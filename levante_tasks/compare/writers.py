"""Write one compare run's outputs into a folder: the tidy CSVs, comparison.json, the plots and comparison.md.

Kept apart from the pipeline that computes the results, so plotting and reporting depend only on `Results`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from levante_tasks.atomic import atomic_open, write_json, write_text
from levante_tasks.compare.results import Results, Settings

CSV_SLICE_ROWS = 100_000
OUTPUT_MARKER = "comparison.json"  # an `--out` folder holding it is an earlier output and may be replaced


def write_outputs(folder: Path, results: Results, summary: dict[str, object], settings: Settings) -> None:
    """Every output file into `folder` (the staging folder): tidy CSVs, comparison.json, plots, comparison.md."""
    from levante_tasks.compare import report

    names = [
        "items",
        "model_theta",
        "model_items",
        "difficulty",
        "human_distributions",
        "unmatched_responses",
        "kl_items",
        "kl_bins",
        "kl_summary",
        "age_equivalence",
        "children_theta",
        "accuracy_by_age",
        "age_curve",
        "cross_language_items",
    ]
    if "kl_orders" in results.tables:  # only a run with orders units (several option-order seeds) has it
        names.insert(names.index("kl_summary") + 1, "kl_orders")
    for name in names:
        _write_csv(folder / f"{name}.csv", results.table(name))
    _write_csv(
        folder / "exclusions.csv",
        pd.DataFrame(results.exclusions, columns=["task", "children_language", "model", "reason", "count"])
    )
    write_json(folder / OUTPUT_MARKER, _jsonable(summary))
    figures = []
    if settings.plots:
        from levante_tasks.compare import age_plot, plots  # matplotlib is imported only when plots are drawn

        figures = (plots.write_all(results, folder / "plots", summary["data"])
                   + age_plot.theta_by_age(results, folder / "plots", summary["data"]))
    write_text(folder / "comparison.md", report.section(summary, figures, results.table("cross_language_items")))


def _write_csv(path: Path, table: pd.DataFrame) -> None:
    """Write a CSV atomically; floats in their shortest form that reads back exactly (R parity to 1e-8).

    pyarrow formats the values (a 500k-row table in a fraction of pandas' time) into memory, a slice at a time, in
    one batch (its default batches of 1,024 rows cost ~40% more CPU); Python writes the bytes from pyarrow's buffer
    (no copy), so a full disk is an OSError naming its errno like any other write.
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv

    with atomic_open(path, "wb") as handle:
        if not len(table.columns):
            handle.write(b"\n")
            return
        table = table.reset_index(drop=True)
        for column in table.columns:
            if isinstance(table[column].dtype, pd.CategoricalDtype):
                table[column] = table[column].astype(object)
        for start in range(0, max(len(table), 1), CSV_SLICE_ROWS):
            part = pa.Table.from_pandas(table.iloc[start : start + CSV_SLICE_ROWS], preserve_index=False)
            buffer = pa.BufferOutputStream()
            pcsv.write_csv(part, buffer, pcsv.WriteOptions(include_header=start == 0, quoting_style="needed",
                                                           batch_size=CSV_SLICE_ROWS))
            handle.write(memoryview(buffer.getvalue()))


def _jsonable(value: object) -> object:
    """Recursively turn numpy scalars and NaN into JSON-friendly values (NaN -> None)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):  # math: numpy's per-scalar call costs ~1 us
        return None
    return value
