"""Profile `upstream`: L0-Bench's generate, sample and augment steps, giving the same programs and traces.

- generate: `num_processes` workers, worker p seeded `seed + p`, each drawing until it holds its share of
  `num_programs` (the last takes the remainder); the data file is the workers' programs in worker order. The
  workers run in up to `num_processes` processes and every program goes to disk as it is drawn (`draw_pool`). A program
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

import json
import math
import os
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from levante_tasks.l0.config import GenConfig
from levante_tasks.l0.dataset import program_id
from levante_tasks.l0.tracer import ProgramError, TracedProgram
from levante_tasks.l0.upstream_grammar import (
    UpstreamProgram,
    UpstreamSampler,
    build_terminals,
    draw_value,
    kind_of_parameter,
)
from levante_tasks.l0.workers import ordered_map

AUGMENT_TRIES = 10_000  # L0-Bench's MAX_AUGMENT_LOOPS
RAW_EXTRA_LINES = 2  # the call and return events L0-Bench's raw traces hold besides the target lines


class UpstreamGenerationError(ValueError):
    """The draws ran out before every worker held its share of programs."""


def _shares(total: int, workers: int) -> list[int]:
    chunk = total // workers
    return [chunk] * (workers - 1) + [total - chunk * (workers - 1)]


@dataclass(frozen=True)
class Pool:
    """Every accepted program on disk, one JSON line each in L0-Bench's data-file order, and what it took."""

    path: Path
    keys: list[int]  # raw trace length (L0-Bench's bin key) per line
    offsets: list[int]  # byte offset of each line
    stats: dict[str, Any]

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every program in file order, read one line at a time."""
        with self.path.open("rb") as handle:
            for line in handle:
                yield json.loads(line)


def _worker_draws(job: tuple[GenConfig, int, int, str]) -> int:
    """Worker `worker`'s draws, until it holds `share` programs by its own duplicate check, one JSON line each
    in `path` (an accepted item, or [reason, id]); returns the number of draws. Runs in a child process."""
    config, worker, share, path = job
    sampler = UpstreamSampler(_settings(config), config.seed + worker)
    seen: set[str] = set()
    kept = draws = 0
    with open(path, "w", encoding="utf-8") as log:
        while kept < share and draws < config.max_attempts:
            draws += 1
            reason, identity, item = _check(sampler.draw(), seen, config)
            if item is None:
                log.write(_line([reason, identity]))
                continue
            seen.add(identity)
            log.write(_line(item))
            kept += 1
    return draws


def _line(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


def draw_pool(config: GenConfig, folder: Path, jobs: int = 1) -> Pool:
    """Every accepted program in L0-Bench's data-file order, written to `folder`/pool.jsonl.

    The workers draw in `jobs` processes, each with its own duplicate check; merging their logs in worker order
    applies the check across workers (an earlier worker's program wins), and a worker left short by that draws
    on here, from where its log ended: the file is the same for every `jobs`."""
    settings = _settings(config)
    shares = _shares(config.num_programs, int(settings["num_processes"]))
    logs = [str(folder / f"worker-{w}.jsonl") for w in range(len(shares))]
    pool = Pool(folder / "pool.jsonl", [], [], {})
    seen: set[str] = set()
    rejected = {"long": 0, "no_inputs": 0, "short": 0, "duplicate": 0, "exec_error": 0}
    attempts = 0
    jobs_list = [(config, w, share, log) for w, (share, log) in enumerate(zip(shares, logs, strict=True))]
    with ordered_map(min(jobs, len(shares))) as run, pool.path.open("w", encoding="utf-8") as out:

        def accept(item: dict[str, Any], text: str) -> None:
            seen.add(item["id"])
            pool.offsets.append(out.tell())
            pool.keys.append(item["steps"] + RAW_EXTRA_LINES)
            out.write(text)

        for worker, logged in enumerate(run(_worker_draws, jobs_list)):
            kept = 0
            with open(logs[worker], encoding="utf-8") as log:
                for text in log:
                    if kept == shares[worker]:
                        break
                    _check_attempts(attempts, config, len(pool.keys))
                    attempts += 1
                    entry = json.loads(text)
                    if isinstance(entry, list) and entry[0] == "no_inputs":
                        rejected["no_inputs"] += 1
                    elif (entry[1] if isinstance(entry, list) else entry["id"]) in seen:
                        rejected["duplicate"] += 1
                    elif isinstance(entry, list):
                        rejected[entry[0]] += 1
                    else:
                        accept(entry, text)
                        kept += 1
            os.remove(logs[worker])
            if kept < shares[worker]:  # programs of earlier workers took some of its share: draw on
                sampler = UpstreamSampler(settings, config.seed + worker)
                for _ in range(logged):
                    sampler.draw()
                while kept < shares[worker]:
                    _check_attempts(attempts, config, len(pool.keys))
                    attempts += 1
                    reason, identity, item = _check(sampler.draw(), seen, config)
                    if item is None:
                        rejected[reason] += 1
                        continue
                    accept(item, _line(item))
                    kept += 1
    pool.stats.update(attempts=attempts, accepted=len(pool.keys), rejected=rejected)
    return pool


def _check_attempts(attempts: int, config: GenConfig, accepted: int) -> None:
    if attempts >= config.max_attempts:
        raise UpstreamGenerationError(f"{attempts} draws gave only {accepted} of {config.num_programs} "
                                      "programs (max_attempts)")


def _check(drawn: UpstreamProgram, seen: set[str],
           config: GenConfig) -> tuple[str, str | None, dict[str, Any] | None]:
    """(rejection reason, program id, item): the item is None when the program is refused."""
    source, inputs = drawn.source, drawn.inputs
    if not inputs:
        return "no_inputs", None, None
    identity = program_id(source)
    if identity in seen:
        return "duplicate", identity, None
    lines = [line for line in source.split("\n") if line.strip()]
    if len(lines) <= config.min_code_lines:
        return "short", identity, None
    if len(lines) >= config.max_code_lines:
        return "long", identity, None
    try:
        program = TracedProgram(source)
    except ProgramError as exc:
        raise UpstreamGenerationError(f"overwritten_grammar / overwritten_terminal: a drawn program has "
                                      f"{_offending_line(source, str(exc))}, which this tracer does not reproduce "
                                      f"(it supports the expressions grammar_v0 and L0-Bench's `<`, `>`, `len(` "
                                      f"words write): {exc}") from None
    trace = program.run(inputs, config.max_trace_steps, "upstream")
    if trace is None:
        return "exec_error", identity, None
    return "", identity, {"id": identity, "bin": 0, "program": source, "inputs": inputs,
                          "trace": list(trace.lines), "truncated": trace.truncated, "steps": len(trace.lines),
                          "num_lines": len(lines), "num_inputs": drawn.num_inputs,
                          "max_expand_depth": drawn.max_expand_depth, "scope_depth": drawn.max_scope_depth}


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


def select(pool: Pool, config: GenConfig) -> tuple[Iterator[dict[str, Any]], dict[str, Any]]:
    """The test items (bin order, then file order), read from the pool file one by one as they are consumed,
    and the bin statistics; items carry their augment slot."""
    thresholds = arange_thresholds(pool.keys, config.num_bins)
    numbers = [digitize_bin(key, thresholds) for key in pool.keys]
    count = len(thresholds) + 1
    selected: dict[int, list[int]] = {b: [] for b in range(1, count + 1)}
    in_pool = dict.fromkeys(selected, 0)
    for position, number in enumerate(numbers):
        in_pool[number] += 1
        if len(selected[number]) < config.per_bin:
            selected[number].append(position)
    test_only = bool(_settings(config)["augment_test_only"])
    chosen = sorted(pos for positions in selected.values() for pos in positions)
    slots = {pos: (rank if test_only else pos) for rank, pos in enumerate(chosen)}
    placements = [(pos, number, slots[pos]) for number, positions in selected.items() for pos in positions]
    stats = {"thresholds": thresholds, "pool_per_bin": {str(b): n for b, n in in_pool.items()},
             "selected_per_bin": {str(b): len(v) for b, v in selected.items()}}
    return _placed(pool, placements), stats


def _placed(pool: Pool, placements: list[tuple[int, int, int]]) -> Iterator[dict[str, Any]]:
    with pool.path.open("rb") as handle:
        for position, number, slot in placements:
            handle.seek(pool.offsets[position])
            yield {**json.loads(handle.readline()), "bin": number, "augment_slot": slot}


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
