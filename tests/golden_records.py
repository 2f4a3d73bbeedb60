"""Per-item records of one lmms-eval run, reduced to one sha256 per scoring unit (tests/test_golden_records.py).

A unit is (task, output type, option-order seed, image variant), read from the records themselves, so the hashes
do not depend on how variants are split into lmms-eval tasks. Per unit: the number of records, the sha256 of the
records (sorted by item_uid, canonical JSON) and the sha256 of what each item showed the model (prompt,
generation kwargs or continuations, or the chat turns; target; image paths).

Regenerate (only for an intended change of records or prompts, in a commit of its own): prepare the synthetic
release of seed 0 as version `synthetic` into DATA_DIR (as tests/test_golden_records.py does), then run
`python tests/golden_records.py DATA_DIR tests/golden/records_synthetic_seed0.json [KEY...] [KEY=OLD...]`; the KEYs
named are record keys the change adds, and the records without them must hash as before; a `KEY=OLD` is a key
whose value the change alters from the string OLD (`parser_version=2`), and the records with OLD put back must hash
as before.
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


def _as_before(record: dict[str, Any], changes: tuple[str, ...]) -> dict[str, Any]:
    """A record as the tree before a change wrote it: each `key` of `changes` dropped, each `key=old` set to old."""
    old_values = dict(change.split("=", 1) for change in changes if "=" in change)
    return {k: old_values.get(k, v) for k, v in record.items() if k not in changes}


def regenerate(data_dir: str, golden: str, without: tuple[str, ...] = ()) -> None:
    """Rewrite the golden file from this tree on a prepared synthetic release (seed 0, version `synthetic`) in
    `data_dir`. With `without`, first check that the records minus those keys are the golden ones (a change that
    only adds record keys changes nothing else); an entry `key=old` puts back a key's old string value instead (a
    version bump changes nothing else). AssertionError names the units that differ."""
    import os
    from pathlib import Path

    from levante_tasks.schema.task_source import TASKS_DIR
    from levante_tasks.testing.models import FixedLetterModel, ImageIndexOracle
    from levante_tasks.testing.scripted import ScriptedChatModel, ScriptedModel

    os.environ.update(LEVANTE_DATA_DIR=data_dir, LEVANTE_DATA_VERSION="synthetic", HF_DATASETS_OFFLINE="1",
                      HF_HUB_OFFLINE="1")
    old = json.loads(Path(golden).read_text(encoding="utf-8"))
    models = {"fixed_B": (lambda: FixedLetterModel(letter="B"), SUITES), "image_oracle": (ImageIndexOracle, SUITES),
              "scripted": (ScriptedModel, SUITES),
              "scripted_chat": (ScriptedChatModel, [s for s in SUITES if "_mc" not in s])}
    new = {}
    for name, (make, suites) in models.items():
        model = make()
        samples = run_suites(model, str(TASKS_DIR), suites)
        turns = model.seen if name == "scripted_chat" else None
        if without:
            kept = {task: [{**line, "levante_item": _as_before(line["levante_item"], without)} for line in lines]
                    for task, lines in samples.items()}
            differ = [unit for unit, want in unit_hashes(kept, turns).items() if old[name].get(unit) != want]
            assert not differ, f"{name}: records differ beyond {without}: {differ[:5]}"
        new[name] = unit_hashes(samples, turns)
    Path(golden).write_text(json.dumps(new, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":  # python tests/golden_records.py DATA_DIR GOLDEN [KEY...] (module docstring)
    import sys

    regenerate(sys.argv[1], sys.argv[2], tuple(sys.argv[3:]))
