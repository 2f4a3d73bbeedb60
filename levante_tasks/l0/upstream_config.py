"""L0-Bench's own generator YAML (e.g. its `example.yaml`), read as it is into a profile-`upstream` config.

L0-Bench's keys map onto ours where they mean the same thing (random_seed -> seed, generate_limit ->
num_programs, sample_bin_limit -> per_bin, num_aug_inputs_per_program -> fewshot_pool_size); the rest
(actions, grammar_ver, overrides, num_processes, ...) are kept in the config's `upstream` section, which the
profile's sampler reads. `output_path` is ignored (the dataset goes to `--out`, and paths are never recorded).
Evaluation settings come from L0-Bench's `run_eval.yaml`: 4 demonstrations and 31 voters (its @5/@15/@31).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from levante_tasks.l0.upstream_grammar import GRAMMAR_VERSIONS, UpstreamRuleError, check_overrides

PROFILES = ("default", "upstream")
ACTIONS = ("generate", "sample", "augment")
# L0-Bench generator keys that mean what ours mean, under our names.
RENAMED = {"random_seed": "seed", "generate_limit": "num_programs", "sample_bin_limit": "per_bin",
           "num_aug_inputs_per_program": "fewshot_pool_size"}
SAME_NAME = ("num_bins", "max_scope_depth", "max_num", "max_list_len", "min_list_len", "max_code_lines",
             "min_code_lines", "max_while_loop", "max_trace_steps")
# Settings only L0-Bench's sampler reads, with their defaults where its generator has one (None: required).
UPSTREAM_ONLY: dict[str, Any] = {"actions": None, "grammar_ver": None, "max_expansion_depth": None,
                                 "num_inputs_per_program": None, "num_processes": None, "augment_test_only": False,
                                 "overwritten_grammar": "", "overwritten_terminal": ""}
EVALUATION = {"num_fewshot": 4, "num_voters": 31}  # run_eval.yaml: num_fewshot 4, num_voters_aggregate up to 31
IGNORED = ("output_path",)
REQUIRED = (*RENAMED, *(k for k in SAME_NAME if k != "num_bins"), *(k for k, v in UPSTREAM_ONLY.items() if v is None))


class ConfigError(ValueError):
    """A config value is missing, of the wrong type, or out of range; the message names the key."""


def is_upstream_format(data: Mapping[str, Any]) -> bool:
    """True for a mapping in L0-Bench's generator format (it has a key only that format has)."""
    return any(key in data for key in (*RENAMED, "actions", "grammar_ver", "num_processes"))


def from_upstream_format(data: Mapping[str, Any]) -> dict[str, Any]:
    """Our config mapping (profile upstream) for an L0-Bench generator mapping; unknown keys are refused."""
    known = {*RENAMED, *SAME_NAME, *UPSTREAM_ONLY, *EVALUATION, *IGNORED}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{unknown[0]}: unknown setting in an L0-Bench generator config "
                          f"(known: {', '.join(sorted(known))})")
    missing = [key for key in REQUIRED if key not in data]
    if missing:
        raise ConfigError(f"{missing[0]}: missing (L0-Bench's generator needs it)")
    ours: dict[str, Any] = {RENAMED.get(key, key): data[key] for key in (*RENAMED, *SAME_NAME) if key in data}
    upstream = {key: data.get(key, default) for key, default in UPSTREAM_ONLY.items()}
    pool = ours["fewshot_pool_size"]
    evaluation = {"num_voters": EVALUATION["num_voters"],
                  "num_fewshot": min(EVALUATION["num_fewshot"], pool) if isinstance(pool, int) else 4}
    evaluation.update({key: data[key] for key in EVALUATION if key in data})
    return {**ours, **evaluation, "profile": "upstream", "upstream": upstream,
            "max_attempts": _attempt_cap(ours["num_programs"]), "bin_ranges": None}


def _attempt_cap(num_programs: Any) -> Any:
    """Draws before giving up (L0-Bench's workers never give up): 1000 per program asked for."""
    return num_programs * 1000 if isinstance(num_programs, int) and not isinstance(num_programs, bool) else 1


def _positive(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"upstream.{key}: expected an integer >= 1, got {value!r}")
    return value


def check_upstream_settings(value: Any) -> dict[str, Any]:
    """Validate the `upstream` section (profile upstream): L0-Bench's own settings, one-line errors."""
    if not isinstance(value, Mapping):
        raise ConfigError("upstream: profile upstream needs the L0-Bench settings (actions, grammar_ver, ...)")
    unknown = sorted(set(value) - set(UPSTREAM_ONLY))
    if unknown:
        raise ConfigError(f"upstream.{unknown[0]}: unknown setting (known: {', '.join(UPSTREAM_ONLY)})")
    settings = {key: value.get(key, default) for key, default in UPSTREAM_ONLY.items()}
    actions = settings["actions"]
    if not isinstance(actions, list) or not actions or any(a not in ACTIONS for a in actions):
        raise ConfigError(f"actions: expected a list of {', '.join(ACTIONS)}, got {actions!r}")
    if actions[:2] != ["generate", "sample"] or len(set(actions)) != len(actions):
        raise ConfigError(f"actions: {actions!r}: a dataset folder needs generate then sample (then augment); "
                          "run `levante-tasks l0 augment` to augment an existing one")
    if settings["grammar_ver"] not in GRAMMAR_VERSIONS:
        raise ConfigError(f"grammar_ver: unknown grammar {settings['grammar_ver']!r} "
                          f"(known: {', '.join(GRAMMAR_VERSIONS)})")
    _positive("max_expansion_depth", settings["max_expansion_depth"])
    _positive("num_processes", settings["num_processes"])
    if settings["num_inputs_per_program"] != 1:
        raise ConfigError(f"num_inputs_per_program: only 1 is supported (one test input per program), "
                          f"got {settings['num_inputs_per_program']!r}")
    if not isinstance(settings["augment_test_only"], bool):
        raise ConfigError(f"augment_test_only: expected true or false, got {settings['augment_test_only']!r}")
    for key in ("overwritten_grammar", "overwritten_terminal"):
        if not isinstance(settings[key], str):
            raise ConfigError(f"{key}: expected `<symbol> ::= a | b` rules joined by @@, got {settings[key]!r}")
    try:
        check_overrides(settings["overwritten_grammar"], settings["overwritten_terminal"])
    except UpstreamRuleError as exc:
        raise ConfigError(str(exc)) from None
    return settings
