"""What `process_results` returns for one doc, and the aggregations lmms-eval applies over docs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from levante_tasks.schema.records import RECORD_KEY


def item_metrics(record: Mapping[str, Any]) -> dict[str, Any]:
    """Per-doc metric values: accuracy, parse success, and the full record (kept in the samples file)."""
    return {
        "levante_acc": float(record["correct"]),
        "levante_parse_rate": float(record["parse_method"] != "none"),
        RECORD_KEY: dict(record),
    }


def records_accuracy(records: Sequence[Mapping[str, Any]]) -> float:
    """Accuracy recomputed from the per-item records (a cross-check of `levante_acc`)."""
    return sum(int(r["correct"]) for r in records) / len(records) if records else float("nan")
