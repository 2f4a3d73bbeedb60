"""The generate and augment steps in memory: test programs with their traces per bin, then demonstration pools.

Standard library only and deterministic: the same config gives the same items on every Python 3.10-3.13.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from levante_tasks.l0 import bins
from levante_tasks.l0.config import GenConfig
from levante_tasks.l0.generator import ProgramGenerator, draw_inputs
from levante_tasks.l0.tracer import ProgramError, TracedProgram
from levante_tasks.l0.workers import ordered_map

REJECTIONS = ("long", "no_inputs", "short", "duplicate", "exec_error")
AUGMENT_BATCH_PER_JOB = 16  # items per worker process held at a time while augmenting


def derive_seed(seed: int, *parts: object) -> int:
    """A 64-bit seed for one sub-stream (e.g. one program's augmentation), independent of every other."""
    text = ":".join(str(p) for p in (seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def program_id(source: str) -> str:
    """L0-Bench's program id: uuid3 of the source in the DNS namespace."""
    return str(uuid.uuid3(uuid.NAMESPACE_DNS, source))


@dataclass(frozen=True)
class Generated:
    """Test items (bin order, then draw order) and what it took to find them."""

    items: Iterable[dict[str, Any]]  # a list, or (profile upstream, streamed) an iterator over the spooled file
    stats: dict[str, Any]


def _draw_pool(config: GenConfig) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rng = random.Random(config.seed)
    generator = ProgramGenerator(config, rng)
    pool: list[dict[str, Any]] = []
    seen: set[str] = set()
    rejected = dict.fromkeys(REJECTIONS, 0)
    range_counts = [0] * config.num_output_bins
    attempts = 0
    while attempts < config.max_attempts and len(pool) < config.num_programs:
        attempts += 1
        drawn = generator.draw()
        reason = None
        if drawn is None:
            reason = "long"
        elif not drawn.params:
            reason = "no_inputs"
        elif drawn.num_lines <= config.min_code_lines:
            reason = "short"
        elif program_id(drawn.source) in seen:
            reason = "duplicate"
        if reason is None:
            inputs = draw_inputs(drawn.params, config, rng)
            trace = TracedProgram(drawn.source).run(inputs, config.max_trace_steps)
            reason = "exec_error" if trace is None else None
        if reason is not None:
            rejected[reason] += 1
            continue
        item = {"id": program_id(drawn.source), "bin": 0, "program": drawn.source, "inputs": inputs,
                "trace": list(trace.lines), "truncated": trace.truncated, "steps": len(trace.lines),
                "num_lines": drawn.num_lines, "scope_depth": drawn.max_depth_used}
        seen.add(item["id"])
        pool.append(item)
        if config.bin_ranges is not None:
            number = bins.range_bin(item["steps"], config.bin_ranges)
            if number is not None:
                range_counts[number - 1] += 1
                if min(range_counts) >= config.per_bin:
                    break
    return pool, {"attempts": attempts, "accepted": len(pool), "rejected": rejected}


def generate(config: GenConfig) -> Generated:
    """Draw programs until `num_programs` are accepted (or every bin range is full), bin them, keep `per_bin`."""
    if config.profile == "upstream":
        with tempfile.TemporaryDirectory(prefix="levante-l0-") as folder:
            streamed = generate_into(config, Path(folder))
            return Generated(list(streamed.items), streamed.stats)
    return generate_into(config, None)


def generate_into(config: GenConfig, folder: Path | None, jobs: int = 1) -> Generated:
    """`generate`, with profile upstream's programs spooled in `folder` (drawn in `jobs` processes) and its
    items an iterator reading them from there one at a time."""
    if config.profile == "upstream":
        from levante_tasks.l0 import upstream  # it builds on this module

        assert folder is not None, "profile upstream spools its programs to a folder"
        pool = upstream.draw_pool(config, folder, jobs)
        items, bin_stats = upstream.select(pool, config)
        return Generated(items, {**pool.stats, **bin_stats})
    pool, stats = _draw_pool(config)
    if config.bin_ranges is not None:
        numbers = [bins.range_bin(item["steps"], config.bin_ranges) for item in pool]
        stats["bin_ranges"] = [list(r) for r in config.bin_ranges]
    else:
        thresholds = bins.auto_thresholds([item["steps"] for item in pool], config.num_bins)
        numbers = [bins.threshold_bin(item["steps"], thresholds) for item in pool]
        stats["thresholds"] = thresholds
    selected: dict[int, list[dict[str, Any]]] = {b: [] for b in range(1, config.num_output_bins + 1)}
    in_pool = dict.fromkeys(selected, 0)
    for item, number in zip(pool, numbers, strict=True):
        if number is None:
            continue
        in_pool[number] += 1
        if len(selected[number]) < config.per_bin:
            selected[number].append({**item, "bin": number})
    stats["pool_per_bin"] = {str(b): n for b, n in in_pool.items()}
    stats["selected_per_bin"] = {str(b): len(items) for b, items in selected.items()}
    return Generated([item for b in selected for item in selected[b]], stats)


def augment_item(item: dict[str, Any], config: GenConfig) -> dict[str, Any] | None:
    """`fewshot_pool_size` new executable inputs for one program with their traces, or None when
    `max_augment_tries` draws do not find enough (the program is then dropped, as in L0-Bench)."""
    rng = random.Random(derive_seed(config.seed, "augment", item["id"]))
    program = TracedProgram(item["program"])
    inputs_pool: list[dict[str, Any]] = []
    traces: list[list[str]] = []
    for _ in range(config.max_augment_tries):
        if len(inputs_pool) == config.fewshot_pool_size:
            break
        inputs = draw_inputs(program.params, config, rng)
        if inputs == item["inputs"] or inputs in inputs_pool:
            continue
        trace = program.run(inputs, config.max_trace_steps)
        if trace is not None:
            inputs_pool.append(inputs)
            traces.append(list(trace.lines))
    if len(inputs_pool) < config.fewshot_pool_size:
        return None
    return {"id": item["id"], "inputs": inputs_pool, "traces": traces}


def augment(items: Iterable[dict[str, Any]], config: GenConfig) -> tuple[list[dict[str, Any]], list[str]]:
    """Demonstration pools for `items` (same order) and the ids of the programs dropped for lack of them.

    A program outside the grammar raises ProgramError naming its id.
    """
    pools, dropped = [], []
    for item, pool in augment_stream(items, config):
        if pool is None:
            dropped.append(item["id"])
        else:
            pools.append(pool)
    return pools, dropped


def augment_stream(items: Iterable[dict[str, Any]], config: GenConfig,
                   jobs: int = 1) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
    """(item, its demonstration pool or None when dropped) in item order, `jobs` processes working on
    batches of items: only a batch is held at a time. A program outside the grammar raises ProgramError."""
    if jobs <= 1:
        yield from ((item, _pool_of((item, config))) for item in items)
        return
    batch_size = jobs * AUGMENT_BATCH_PER_JOB
    with ordered_map(jobs) as run:
        iterator = iter(items)
        while batch := list(itertools.islice(iterator, batch_size)):
            yield from zip(batch, run(_pool_of, [(item, config) for item in batch]), strict=True)


def _pool_of(job: tuple[dict[str, Any], GenConfig]) -> dict[str, Any] | None:
    """One item's pool with the profile's rule (runs in a worker process)."""
    from levante_tasks.l0 import upstream  # it builds on this module

    item, config = job
    make_pool = upstream.augment_item if config.profile == "upstream" else augment_item
    try:
        return make_pool(item, config)
    except ProgramError as exc:
        raise ProgramError(f"program {item['id']}: {exc}") from None
