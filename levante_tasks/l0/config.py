"""The generator configuration: one frozen dataclass, built from a plain mapping with one-line errors.

Standard library only (the YAML file reader lives in `config_file`), so the generator runs on any interpreter.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from levante_tasks.l0.grammar import BOOL_INPUTS, INT_INPUTS, LIST_INPUTS
from levante_tasks.l0.upstream_config import (
    PROFILES,
    ConfigError,
    check_upstream_settings,
    from_upstream_format,
    is_upstream_format,
)

# Statement kinds the grammar can emit, in the fixed order used for weighted draws.
OPERATIONS = ("num_assignment", "bool_assignment", "if_block", "while_block", "append", "pop")
# L0-Bench's grammar picks statement, assignment and list-operation alternatives uniformly: 1/8, 1/8, 1/4, ...
DEFAULT_OPERATIONS = {"num_assignment": 1.0, "bool_assignment": 1.0, "if_block": 2.0, "while_block": 2.0,
                      "append": 1.0, "pop": 1.0}


@dataclass(frozen=True)
class GenConfig:
    """Everything that determines a generated dataset (same config, same bytes)."""

    seed: int = 42
    num_programs: int = 2000  # accepted programs to draw before binning (fewer if every bin range is full)
    max_attempts: int = 200_000  # program draws before giving up
    int_inputs: tuple[int, int] = (1, 6)  # how many int / list / bool parameters to draw (inclusive range)
    list_inputs: tuple[int, int] = (2, 6)
    bool_inputs: tuple[int, int] = (1, 3)
    max_num: int = 10  # numbers and list elements are 0..max_num-1
    min_list_len: int = 5
    max_list_len: int = 10  # list indices written in programs are 0..max_list_len//2-1
    min_code_lines: int = 20  # a program is kept when min_code_lines < its lines < max_code_lines
    max_code_lines: int = 50
    max_scope_depth: int = 1  # nesting levels of if/while bodies (1: blocks, no nested blocks)
    max_while_loop: int = 100  # counter loops run to an even bound in 4..max_while_loop-2
    continue_probability: float = 0.5  # chance of one more statement in a statement list
    while_true_probability: float = 0.0  # chance that a while block is `while True:` (never ends; truncated)
    operations: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_OPERATIONS))
    max_trace_steps: int = 500  # traces stop (truncated) after this many lines
    num_bins: int = 10  # automatic bins (L0-Bench rule) when bin_ranges is not given
    bin_ranges: tuple[tuple[int, int], ...] | None = None  # explicit inclusive trace-length ranges, bin k = k-th
    per_bin: int = 100  # test programs kept per bin, first drawn first
    fewshot_pool_size: int = 16  # demonstration (input, trace) pairs made per test program
    max_augment_tries: int = 1000  # input draws per program before it is dropped for lack of demonstrations
    num_fewshot: int = 4  # demonstrations in one prompt
    num_voters: int = 5  # prompts per program, each with its own demonstration draw
    profile: str = "default"  # "upstream": L0-Bench's sampler, step counter, bins, augment and aggregation
    upstream: Mapping[str, Any] | None = None  # L0-Bench-only settings (profile upstream; see upstream_config)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready mapping (tuples as lists)."""
        data = dataclasses.asdict(self)
        data["operations"] = dict(self.operations)
        data["upstream"] = dict(self.upstream) if self.upstream is not None else None
        return json.loads(json.dumps(data))

    def sha256(self) -> str:
        """Hash of the canonical JSON of `to_dict()`: names the exact generator settings of a dataset."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @property
    def num_output_bins(self) -> int:
        """How many bins the dataset has (numbered 1..this)."""
        return len(self.bin_ranges) if self.bin_ranges is not None else self.num_bins

    @property
    def step_rule(self) -> str:
        """How traces are cut at max_trace_steps (`tracer.TracedProgram.run`)."""
        return "upstream" if self.profile == "upstream" else "exact"


def _int(key: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key}: expected an integer, got {value!r}")
    if value < low:
        raise ConfigError(f"{key}: must be >= {low}, got {value}")
    return value


def _probability(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ConfigError(f"{key}: expected a number between 0 and 1, got {value!r}")
    return float(value)


def _pair(key: str, value: Any, low: int) -> tuple[int, int]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ConfigError(f"{key}: expected [min, max], got {value!r}")
    first, second = (_int(key, v, low) for v in value)
    if first > second:
        raise ConfigError(f"{key}: min {first} is above max {second}")
    return first, second


def _operations(value: Any) -> dict[str, float]:
    if not isinstance(value, Mapping) or not value:
        raise ConfigError(f"operations: expected a mapping of {', '.join(OPERATIONS)} to weights")
    weights = {}
    for name, weight in value.items():
        if name not in OPERATIONS:
            raise ConfigError(f"operations: unknown operation {name!r} (known: {', '.join(OPERATIONS)})")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
            raise ConfigError(f"operations.{name}: expected a weight >= 0, got {weight!r}")
        weights[name] = float(weight)
    if not any(weights.get(name, 0) > 0 for name in ("num_assignment", "bool_assignment", "append", "pop")):
        raise ConfigError("operations: at least one of num_assignment, bool_assignment, append, pop needs weight > 0")
    return {name: weights.get(name, 0.0) for name in OPERATIONS}


def _ranges(value: Any) -> tuple[tuple[int, int], ...] | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(f"bin_ranges: expected a list of [min, max] trace lengths, got {value!r}")
    ranges = tuple(_pair(f"bin_ranges[{i}]", r, 1) for i, r in enumerate(value))
    for i, (previous, current) in enumerate(zip(ranges, ranges[1:], strict=False), start=1):
        if current[0] <= previous[1]:
            raise ConfigError(f"bin_ranges[{i}]: overlaps or precedes bin_ranges[{i - 1}]")
    return ranges


def from_mapping(data: Mapping[str, Any]) -> GenConfig:
    """Validate a mapping (e.g. parsed YAML) into a GenConfig; missing keys take the defaults."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"expected a mapping of settings, got {type(data).__name__}")
    if is_upstream_format(data):
        data = from_upstream_format(data)
    known = {f.name for f in dataclasses.fields(GenConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{unknown[0]}: unknown setting (known: {', '.join(sorted(known))})")
    merged = {**GenConfig().to_dict(), **data}
    cfg = GenConfig(
        seed=_int("seed", merged["seed"], 0),
        num_programs=_int("num_programs", merged["num_programs"], 1),
        max_attempts=_int("max_attempts", merged["max_attempts"], 1),
        int_inputs=_pair("int_inputs", merged["int_inputs"], 0),
        list_inputs=_pair("list_inputs", merged["list_inputs"], 0),
        bool_inputs=_pair("bool_inputs", merged["bool_inputs"], 0),
        max_num=_int("max_num", merged["max_num"], 1),
        min_list_len=_int("min_list_len", merged["min_list_len"], 0),
        max_list_len=_int("max_list_len", merged["max_list_len"], 0),
        min_code_lines=_int("min_code_lines", merged["min_code_lines"], 0),
        max_code_lines=_int("max_code_lines", merged["max_code_lines"], 4),
        max_scope_depth=_int("max_scope_depth", merged["max_scope_depth"], 0),
        max_while_loop=_int("max_while_loop", merged["max_while_loop"], 5),
        continue_probability=_probability("continue_probability", merged["continue_probability"]),
        while_true_probability=_probability("while_true_probability", merged["while_true_probability"]),
        operations=_operations(merged["operations"]),
        max_trace_steps=_int("max_trace_steps", merged["max_trace_steps"], 1),
        num_bins=_int("num_bins", merged["num_bins"], 1),
        bin_ranges=_ranges(merged["bin_ranges"]),
        per_bin=_int("per_bin", merged["per_bin"], 1),
        fewshot_pool_size=_int("fewshot_pool_size", merged["fewshot_pool_size"], 0),
        max_augment_tries=_int("max_augment_tries", merged["max_augment_tries"], 1),
        num_fewshot=_int("num_fewshot", merged["num_fewshot"], 0),
        num_voters=_int("num_voters", merged["num_voters"], 1),
        profile=_profile(merged["profile"]),
        upstream=check_upstream_settings(merged["upstream"]) if merged["profile"] == "upstream" else
        _no_upstream(merged["upstream"]),
    )
    _check_relations(cfg)
    return cfg


def _profile(value: Any) -> str:
    if value not in PROFILES:
        raise ConfigError(f"profile: expected one of {', '.join(PROFILES)}, got {value!r}")
    return value


def _no_upstream(value: Any) -> None:
    if value is not None:
        raise ConfigError("upstream: L0-Bench settings need `profile: upstream`")


def _check_relations(cfg: GenConfig) -> None:
    if cfg.min_list_len > cfg.max_list_len:
        raise ConfigError(f"min_list_len: {cfg.min_list_len} is above max_list_len {cfg.max_list_len}")
    if cfg.min_code_lines + 1 >= cfg.max_code_lines:
        raise ConfigError(f"max_code_lines: must exceed min_code_lines + 1 ({cfg.min_code_lines + 1})")
    if cfg.num_fewshot > cfg.fewshot_pool_size:
        raise ConfigError(f"num_fewshot: {cfg.num_fewshot} is more than fewshot_pool_size {cfg.fewshot_pool_size}")
    for key, names in (("int_inputs", INT_INPUTS), ("list_inputs", LIST_INPUTS), ("bool_inputs", BOOL_INPUTS)):
        if getattr(cfg, key)[1] > len(names):
            raise ConfigError(f"{key}: at most {len(names)} parameters of this kind exist ({', '.join(names)})")
    only_lists = cfg.operations["num_assignment"] == 0 and cfg.operations["bool_assignment"] == 0
    if only_lists and cfg.list_inputs[0] == 0:
        raise ConfigError("list_inputs: must be at least 1 when only append/pop statements have weight")
    if cfg.int_inputs[1] + cfg.list_inputs[1] + cfg.bool_inputs[1] == 0:
        raise ConfigError("int_inputs: programs need at least one parameter (all input ranges are 0)")
    longest = max_target_steps(cfg)
    for i, (low, _) in enumerate(cfg.bin_ranges or ()):
        if low > longest:
            raise ConfigError(f"bin_ranges[{i}]: starts at {low} steps, but max_trace_steps {cfg.max_trace_steps} "
                              f"cuts every trace at {longest} steps: the bin could never be filled")


def max_target_steps(cfg: GenConfig) -> int:
    """The longest target trace the config can produce (L0-Bench's counter keeps at most max_trace_steps - 1)."""
    return cfg.max_trace_steps - 1 if cfg.profile == "upstream" else cfg.max_trace_steps
