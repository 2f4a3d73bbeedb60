"""What `process_results` returns for one doc, and the aggregations lmms-eval applies over docs.

Every doc gives `levante_acc`, `levante_parse_rate` and the record (`RECORD_KEY`); a doc of a task with reported
sub-types (egma-math) also gives `levante_acc_<sub-type>`, so one task reports per-type accuracies (as mmstar
reports categories).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from levante_tasks.schema.records import RECORD_KEY
from levante_tasks.schema.tasks import task_info

SUBTYPE_METRIC = "levante_acc_{}"


def item_metrics(record: Mapping[str, Any]) -> dict[str, Any]:
    """Per-doc metric values: accuracy (overall and of the item's sub-type), parse success, the full record."""
    values = {
        "levante_acc": float(record["correct"]),
        "levante_parse_rate": float(record["parse_method"] != "none"),
        RECORD_KEY: dict(record),
    }
    subtype = task_info(record["task"]).subtype_of(record["trial_type"])
    if subtype:
        values[SUBTYPE_METRIC.format(subtype)] = float(record["correct"])
    return values


def records_accuracy(records: Sequence[Mapping[str, Any]]) -> float:
    """Accuracy recomputed from the per-item records (a cross-check of `levante_acc`)."""
    return sum(int(r["correct"]) for r in records) / len(records) if records else float("nan")
