"""Per-item records of one lmms-eval run, reduced to one sha256 per scoring unit (tests/test_golden_records.py).

A unit is (task, output type, option-order seed, image variant), read from the records themselves, so the hashes
do not depend on how variants are split into lmms-eval tasks. Per unit: the number of records, the sha256 of the
records (sorted by item_uid, canonical JSON) and the sha256 of what each item showed the model (prompt,
generation kwargs or continuations, or the chat turns; target; image paths).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from typing import Any

SUITES = ["levante", "levante_seed1", "levante_seed2", "levante_blank", "levante_shuffled", "levante_mc",
          "levante_mc_seed1", "levante_mc_seed2", "levante_mc_blank", "levante_mc_shuffled"]


def canonical(value: Any) -> bytes:
    """Canonical JSON bytes (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def unit_hashes(samples: dict[str, list[dict[str, Any]]], chat_turns: dict | None = None) -> dict[str, dict]:
    """{unit: {"n", "records", "inputs"}} from simple_evaluate's `samples`; `chat_turns` maps (item_uid, seed,
    variant) to the turns a chat model saw (else the request arguments stand for what the model was shown)."""
    records: dict[str, list] = defaultdict(list)
    inputs: dict[str, list] = defaultdict(list)
    for lines in samples.values():
        for line in lines:
            record = line["levante_item"]
            unit = f"{record['task']}/{record['output_type']}/seed{record['seed']}/{record['variant']}"
            args = line["arguments"]
            if chat_turns is not None:
                shown = chat_turns[(record["item_uid"], record["seed"], record["variant"])]
            else:
                shown = args[1] if record["output_type"] == "generate_until" else args[1::5]
            records[unit].append(record)
            inputs[unit].append([record["item_uid"], args[0], shown, line["target"], line.get("input_media")])
    return {unit: {"n": len(records[unit]),
                   "records": hashlib.sha256(canonical(sorted(records[unit], key=lambda r: r["item_uid"]))).hexdigest(),
                   "inputs": hashlib.sha256(canonical(sorted(inputs[unit]))).hexdigest()}
            for unit in sorted(records)}


def run_suites(model: Any, tasks_dir: str, suites: list[str]) -> dict[str, list[dict[str, Any]]]:
    """simple_evaluate over our tasks only; returns its samples per lmms-eval task."""
    from lmms_eval import evaluator
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(include_path=tasks_dir, include_defaults=False)
    return evaluator.simple_evaluate(model=model, tasks=suites, task_manager=manager, log_samples=True)["samples"]
