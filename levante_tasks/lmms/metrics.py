"""What `process_results` returns for one doc, and the aggregations lmms-eval applies over docs.

Every doc gives `levante_acc`, `levante_parse_rate` and the record (`RECORD_KEY`). A task with reported sub-types
(egma-math, the only one) also gives every doc one `levante_acc_<sub-type>` per sub-type: the doc's correctness
under its own sub-type, None under the others; `subtype_accuracy` averages the non-None values (as mmstar's
category metrics score only their category). So every metric of a task has one value per doc: lmms-eval sizes a
task in group means by its last metric's item count, which then is the task's item count, and the group rows
equal the accuracy pooled over items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from levante_tasks.schema.records import RECORD_KEY
from levante_tasks.schema.tasks import task_info

SUBTYPE_METRIC = "levante_acc_{}"


def item_metrics(record: Mapping[str, Any]) -> dict[str, Any]:
    """Per-doc metric values: accuracy, parse success, the full record, and each sub-type's accuracy value."""
    correct = float(record["correct"])
    values: dict[str, Any] = {
        "levante_acc": correct,
        "levante_parse_rate": float(record["parse_method"] != "none"),
        RECORD_KEY: dict(record),
    }
    values.update(subtype_values(record))
    return values


def subtype_values(record: Mapping[str, Any]) -> dict[str, float | None]:
    """`levante_acc_<sub>` of one record for every sub-type its task reports in the record's output type:
    its correctness under its own sub-type, None under the others."""
    info = task_info(record["task"])
    own = info.subtype_of(record["trial_type"])
    multiple_choice = record["output_type"] == "multiple_choice"
    return {SUBTYPE_METRIC.format(name): (float(record["correct"]) if name == own else None)
            for name in info.reported_subtypes(multiple_choice)}


def subtype_accuracy(values: Sequence[float | None]) -> float:
    """Mean of one sub-type metric over the docs of that sub-type (the non-None values); NaN when none."""
    scored = [float(v) for v in values if v is not None]
    return sum(scored) / len(scored) if scored else float("nan")


def records_accuracy(records: Sequence[Mapping[str, Any]]) -> float:
    """Accuracy recomputed from the per-item records (a cross-check of `levante_acc`)."""
    return sum(int(r["correct"]) for r in records) / len(records) if records else float("nan")
