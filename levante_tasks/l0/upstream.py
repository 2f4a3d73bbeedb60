"""Profile `upstream`: L0-Bench's generate, sample and augment steps, giving the same programs and traces.

- generate: `num_processes` workers, worker p seeded `seed + p`, each drawing until it holds its share of
  `num_programs` (the last takes the remainder); the data file is the workers' programs in worker order. A program
  is refused when it has no used input, repeats an earlier one (by uuid3; earlier workers count as earlier), has
  <= min_code_lines or >= max_code_lines lines, or raises before L0-Bench's step limit.
- sample: the key is the raw trace length (target + 2: L0-Bench's traces keep the call and return events);
  thresholds `numpy.arange(1.5 x min, 0.8 x max, (0.8 x max - 1.5 x min) / (num_bins - 1))`, bin =
  `numpy.digitize(key, thresholds, right=True) + 1`; the first `per_bin` items of each bin in file order are
  the test items.
- augment: item i (test items in file order, or every item when augment_test_only is false) gets a fresh
  stream seeded `seed + i % num_processes`; new inputs are drawn until `fewshot_pool_size` distinct executable
  ones other than the test input exist; an item is dropped when its 10000 tries are used up (even by the last
  successful one, as in L0-Bench).

L0-Bench's workers share the duplicate check through a manager dict, so which of two identical programs drawn
by different workers at about the same time survives depends on timing; here the earlier worker's wins.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from levante_tasks.l0.config import GenConfig
from levante_tasks.l0.dataset import program_id
from levante_tasks.l0.tracer import ProgramError, TracedProgram
from levante_tasks.l0.upstream_grammar import UpstreamSampler, build_terminals, draw_value, kind_of_parameter

AUGMENT_TRIES = 10_000  # L0-Bench's MAX_AUGMENT_LOOPS
RAW_EXTRA_LINES = 2  # the call and return events L0-Bench's raw traces hold besides the target lines


class UpstreamGenerationError(ValueError):
    """The draws ran out before every worker held its share of programs."""


def _shares(total: int, workers: int) -> list[int]:
    chunk = total // workers
    return [chunk] * (workers - 1) + [total - chunk * (workers - 1)]


def draw_pool(config: GenConfig) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every accepted program in L0-Bench's data-file order, and the draw statistics."""
    settings = _settings(config)
    seen: set[str] = set()
    pool: list[dict[str, Any]] = []
    rejected = {"long": 0, "no_inputs": 0, "short": 0, "duplicate": 0, "exec_error": 0}
    attempts = 0
    for worker, share in enumerate(_shares(config.num_programs, int(settings["num_processes"]))):
        sampler = UpstreamSampler(settings, config.seed + worker)
        kept = 0
        while kept < share:
            if attempts >= config.max_attempts:
                raise UpstreamGenerationError(f"{attempts} draws gave only {len(pool)} of {config.num_programs} "
                                              "programs (max_attempts)")
            attempts += 1
            drawn = sampler.draw()
            reason, item = _check(drawn.source, drawn.inputs, seen, config)
            if item is None:
                rejected[reason] += 1
                continue
            item.update(num_inputs=drawn.num_inputs, max_expand_depth=drawn.max_expand_depth,
                        scope_depth=drawn.max_scope_depth)
            seen.add(item["id"])
            pool.append(item)
            kept += 1
    return pool, {"attempts": attempts, "accepted": len(pool), "rejected": rejected}


def _check(source: str, inputs: dict[str, Any], seen: set[str],
           config: GenConfig) -> tuple[str, dict[str, Any] | None]:
    if not inputs:
        return "no_inputs", None
    identity = program_id(source)
    if identity in seen:
        return "duplicate", None
    lines = [line for line in source.split("\n") if line.strip()]
    if len(lines) <= config.min_code_lines:
        return "short", None
    if len(lines) >= config.max_code_lines:
        return "long", None
    try:
        program = TracedProgram(source)
    except ProgramError as exc:
        raise UpstreamGenerationError(f"overwritten_grammar / overwritten_terminal: a drawn program has "
                                      f"{_offending_line(source, str(exc))}, which this tracer does not reproduce "
                                      f"(it supports the expressions grammar_v0 and L0-Bench's `<`, `>`, `len(` "
                                      f"words write): {exc}") from None
    trace = program.run(inputs, config.max_trace_steps, "upstream")
    if trace is None:
        return "exec_error", None
    return "", {"id": identity, "bin": 0, "program": source, "inputs": inputs, "trace": list(trace.lines),
                "truncated": trace.truncated, "steps": len(trace.lines), "num_lines": len(lines)}


def _offending_line(source: str, problem: str) -> str:
    """`the line `...`` a tracer error names (`line N: ...`), or `a line` when it names none."""
    found = re.match(r"line (\d+):", problem)
    lines = source.split("\n")
    if found is None or not 1 <= int(found.group(1)) <= len(lines):
        return "a line"
    return f"the line `{lines[int(found.group(1)) - 1].strip()}`"


def arange_thresholds(keys: Sequence[float], num_bins: int) -> list[float]:
    """numpy.arange(1.5 x min, 0.8 x max, step) as numpy fills it: start, start + step, then start + i x delta
    with delta = (start + step) - start."""
    if num_bins < 2:
        raise UpstreamGenerationError("num_bins: L0-Bench's sample step divides by num_bins - 1 (needs >= 2)")
    start, stop = 1.5 * min(keys), 0.8 * max(keys)
    step = (stop - start) / (num_bins - 1)
    if step == 0:
        raise UpstreamGenerationError("every trace has the same length: L0-Bench's bin thresholds are undefined")
    length = max(math.ceil((stop - start) / step), 0)
    delta = (start + step) - start
    return [start, start + step, *(start + i * delta for i in range(2, length))][:length]


def digitize_bin(key: float, thresholds: Sequence[float]) -> int:
    """numpy.digitize(key, thresholds, right=True) + 1, for increasing or decreasing thresholds."""
    if len(thresholds) > 1 and thresholds[0] > thresholds[-1]:
        return 1 + sum(1 for t in thresholds if t >= key)
    return 1 + sum(1 for t in thresholds if t < key)


def select(pool: list[dict[str, Any]], config: GenConfig) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The test items (bin order, then file order) and the bin statistics; items carry their augment slot."""
    keys = [item["steps"] + RAW_EXTRA_LINES for item in pool]
    thresholds = arange_thresholds(keys, config.num_bins)
    numbers = [digitize_bin(key, thresholds) for key in keys]
    count = len(thresholds) + 1
    selected: dict[int, list[dict[str, Any]]] = {b: [] for b in range(1, count + 1)}
    in_pool = dict.fromkeys(selected, 0)
    chosen: list[tuple[int, int]] = []  # (file position, bin)
    for position, number in enumerate(numbers):
        in_pool[number] += 1
        if len(selected[number]) < config.per_bin:
            selected[number].append(pool[position])
            chosen.append((position, number))
    test_only = bool(_settings(config)["augment_test_only"])
    slots = {pos: (rank if test_only else pos) for rank, (pos, _) in enumerate(sorted(chosen))}
    items = [{**pool[pos], "bin": number, "augment_slot": slots[pos]}
             for number in selected for pos, b in chosen if b == number]
    stats = {"thresholds": thresholds, "pool_per_bin": {str(b): n for b, n in in_pool.items()},
             "selected_per_bin": {str(b): len(v) for b, v in selected.items()}}
    return items, stats


def _settings(config: GenConfig) -> dict[str, Any]:
    """The sampler's settings: the config's numbers and its L0-Bench-only section."""
    assert config.upstream is not None, "profile upstream without its settings"
    return {**dict(config.upstream), "min_code_lines": config.min_code_lines, "max_num": config.max_num,
            "max_list_len": config.max_list_len, "min_list_len": config.min_list_len,
            "max_while_loop": config.max_while_loop, "max_scope_depth": config.max_scope_depth}


def augment_item(item: Mapping[str, Any], config: GenConfig) -> dict[str, Any] | None:
    """L0-Bench's demonstrations for one test item, or None when it gives up on the item.

    Candidate inputs are drawn parameter by parameter in signature order (kinds told by name) from the item's
    augment stream; a candidate equal to the test input or to one already found is skipped, one that runs is
    kept. Every candidate costs one of AUGMENT_TRIES; an item whose budget is spent is dropped, even when the
    last candidate completed its pool."""
    settings = _settings(config)
    numbers = build_terminals(config.max_num, config.max_while_loop, config.max_list_len,
                              str(settings["overwritten_terminal"]))["<number>"]
    rng = random.Random(config.seed + int(item["augment_slot"]) % int(settings["num_processes"]))
    kinds = {name: kind_of_parameter(name) for name in item["inputs"]}
    program = TracedProgram(item["program"])
    found: list[dict[str, Any]] = []
    traces: list[list[str]] = []
    spent = 0
    while len(found) < config.fewshot_pool_size and spent < AUGMENT_TRIES:
        spent += 1
        candidate = {name: draw_value(kind, numbers, config.min_list_len, config.max_list_len, rng)
                     for name, kind in kinds.items()}
        if candidate == item["inputs"] or candidate in found:
            continue
        trace = program.run(candidate, config.max_trace_steps, "upstream")
        if trace is not None:
            found.append(candidate)
            traces.append(list(trace.lines))
    return None if spent == AUGMENT_TRIES else {"id": item["id"], "inputs": found, "traces": traces}
