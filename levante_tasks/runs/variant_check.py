"""Catch a swapped run file: the LEVANTE variant a file says it holds against the variant its records hold.

What a file says: an lmms-eval samples file's `<task>` name (`<date>_samples_levante_vocab_seed1.jsonl`: vocab,
seed 1), an inspect_ai log's `metadata.levante` (with `orders: K`: the replicates, seeds 0 .. K-1). What its
records hold: each `levante_item` record's `task`, `output_type`, `seed` and `variant` (a field a record lacks, as
older hand-made records may, is not compared). A copied or renamed file (vocab's samples under the trog name, seed
1's under the seed-0 name) would otherwise be read as the task its name says, scored against that task's results
row and counted in its cell. Every reader of run outputs (summarize, verify, rescore, compare) refuses such a file
with the line `mismatch` writes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from levante_tasks.schema.variant import Variant, VariantNameError

RECORD_FIELDS = ("task", "output_type", "seed", "variant")  # the record keys that name its variant


def named_variant(lmms_task: str) -> Variant | None:
    """The LEVANTE variant an lmms-eval task name stands for; None for any other task's name."""
    try:
        return Variant.parse(lmms_task)
    except VariantNameError:
        return None


def _fields(variant: Variant) -> dict[str, Any]:
    """The record fields a record of `variant` holds."""
    return {"task": variant.task, "output_type": variant.output_type.value, "seed": variant.seed,
            "variant": variant.control.value}


def _seeds_text(seeds: Collection[int]) -> str:
    """`seed 1`, or `seeds 0-7` for the replicates of an orders run (`seeds 0, 2` when not contiguous)."""
    ordered = sorted(seeds)
    if len(ordered) == 1:
        return f"seed {ordered[0]}"
    if ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"seeds {ordered[0]}-{ordered[-1]}"
    return f"seeds {', '.join(map(str, ordered))}"


def _describe(fields: Mapping[str, Any], seeds: Collection[int] | None = None) -> str:
    """`task vocab, seed 1 (generate_until, original images)`: a variant in words, `?` for what a record lacks;
    `seeds` (when given) in place of the one seed."""
    show = {key: fields.get(key, "?") for key in RECORD_FIELDS}
    seed = _seeds_text(seeds) if seeds is not None else f"seed {show['seed']}"
    return f"task {show['task']}, {seed} ({show['output_type']}, {show['variant']} images)"


def _differs(record: Mapping[str, Any], named: list[tuple[str, Any]]) -> bool:
    """Whether the record holds one of the `(key, value)` fields with another value (a plain loop: every record of
    every file is checked)."""
    for key, value in named:
        if key in record and record[key] != value:
            return True
    return False


def mismatch(label: str, says: str, expected: Variant, records: Iterable[tuple[str, Mapping[str, Any]]],
             seeds: Collection[int] | None = None) -> str | None:
    """One line naming the file, what it says (`says`, e.g. "its name levante_vocab") and what its first record of
    another variant holds (`records`: (where in the file, record) pairs); None when every record is of `expected`.
    `seeds`: the option-order seeds the file holds (an inspect orders log: 0 .. K-1), in place of expected's one."""
    want = _fields(expected)
    allowed = {expected.seed} if seeds is None else set(seeds)
    named = [(key, value) for key, value in want.items() if key != "seed"]
    for where, record in records:
        if _differs(record, named) or ("seed" in record and record["seed"] not in allowed):
            return (f"{label}: {says} says {_describe(want, seeds)}, but {where} holds a record of "
                    f"{_describe(record)}: another task's or seed's records (a swapped or renamed file?); the file is "
                    "not read")
    return None
