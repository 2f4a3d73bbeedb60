"""Provenance of one task in one lmms-eval run and the keys that must agree before cells are compared.

From the results file itself: the task's resolved config (`configs[task]`), the run's `config` (model, model_args,
batch_size, limit, offset, gen_kwargs, device, seeds), `system_instruction_sha`, `chat_template_sha`.
- task_version: the task's human-bumped catalogue version (`TaskInfo.version`) as the task layer recorded it
  (`metadata.levante.provenance.task_version`); "unknown" for results written before tasks carried one. Replicates
  of different task versions are never pooled into one cell (summary.matrix refuses them).
- task_config_sha256: sha256 of the canonical JSON (key-sorted, compact) of `configs[task]` without
  `metadata.levante.provenance`; function reprs lose their memory address (`<function f at 0x7f..>` ->
  `<function f>`), which would otherwise change the hash on every run.
- prompt: the same hash without the keys that name a variant of one task (`task`, `task_alias`,
  `metadata.levante.seed`/`variant`) and without `generation_kwargs` (the budget), plus the run's system
  instruction and chat template hashes: what seeds and controls of one task share.

Written by the task layer (contract, docs/summary.md): `configs[task].metadata.levante.provenance` =
`{task_version, dataset_fingerprint, data_version, synthetic_data, task_source_sha256, levante_tasks_version,
device_class, lmms_eval: {version, commit, patch_set_sha256, patched}}` (task_version: an int; synthetic_data:
schema.markers; None: not recorded).
A value that is absent is "unknown"; unknown differs from any known value in every comparison.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from levante_tasks.runs.model import UNKNOWN, or_unknown, redact_model_args
from levante_tasks.schema.task_source import task_source_sha256  # noqa: F401 (what runs record, named here)

COMPARISON_KEYS = ("limit", "budget", "prompt", "dataset_fingerprint", "patch_set_sha256")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


def _normalise(value: Any) -> Any:
    """JSON-ready value with memory addresses removed from object reprs."""
    if isinstance(value, str):
        return _ADDRESS.sub(">", value)
    if isinstance(value, Mapping):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalise(v) for v in value]
    return value


def sha256_json(value: Any) -> str:
    """sha256 of the canonical JSON of `value` (key-sorted, compact, UTF-8, addresses removed)."""
    text = json.dumps(_normalise(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def levante_spec(config: Mapping[str, Any]) -> dict[str, Any]:
    """`metadata.levante` of a task config ({} when absent)."""
    metadata = config.get("metadata")
    spec = metadata.get("levante") if isinstance(metadata, Mapping) else None
    return dict(spec) if isinstance(spec, Mapping) else {}


def recorded(config: Mapping[str, Any]) -> dict[str, Any]:
    """What the task layer recorded under `metadata.levante.provenance` ({} when nothing)."""
    value = levante_spec(config).get("provenance")
    return dict(value) if isinstance(value, Mapping) else {}


def _without(config: Mapping[str, Any], top: tuple[str, ...], levante: tuple[str, ...]) -> dict[str, Any]:
    """A shallow copy of `config` without the `top` keys and the `levante` keys of metadata.levante."""
    trimmed = {k: v for k, v in config.items() if k not in top}
    spec = levante_spec(trimmed)
    if spec:
        trimmed["metadata"] = {**trimmed["metadata"], "levante": {k: v for k, v in spec.items() if k not in levante}}
    return trimmed


def task_config_sha256(config: Mapping[str, Any]) -> str:
    """sha256 of the task's resolved config as recorded (without the recorded provenance block)."""
    return sha256_json(_without(config, (), ("provenance",)))


def recorded_task_version(mine: Mapping[str, Any]) -> int | str:
    """The task version a run recorded (a whole number, `TaskInfo.version`); UNKNOWN when it recorded none."""
    value = mine.get("task_version")
    return value if isinstance(value, int) and not isinstance(value, bool) else UNKNOWN


def prompt_hash(config: Mapping[str, Any], results: Mapping[str, Any]) -> str:
    """sha256 of what seeds and controls of one task share: the config minus variant names and budget."""
    shared = _without(config, ("task", "task_alias", "generation_kwargs"), ("provenance", "seed", "variant"))
    extra = {k: results.get(k) for k in ("system_instruction_sha", "chat_template_sha", "fewshot_as_multiturn")}
    return sha256_json({"config": shared, **extra})


def task_provenance(results: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """Everything a cell records about how one task of one run was made (no absolute paths)."""
    run = results["config"]
    mine = recorded(config)
    lmms = mine.get("lmms_eval") if isinstance(mine.get("lmms_eval"), Mapping) else {}
    device = mine.get("device_class") or (str(run["device"]).split(":")[0] if run.get("device") else None)
    return {
        "lmms_eval_version": or_unknown(lmms.get("version")),
        "lmms_eval_commit": or_unknown(lmms.get("commit")),
        "patch_set_sha256": or_unknown(lmms.get("patch_set_sha256")),
        "patched": lmms.get("patched"),
        "levante_tasks_version": or_unknown(mine.get("levante_tasks_version")),
        "task_version": recorded_task_version(mine),
        "task_config_sha256": task_config_sha256(config),
        "task_source_sha256": or_unknown(mine.get("task_source_sha256")),
        "dataset_fingerprint": or_unknown(mine.get("dataset_fingerprint")),
        "data_version": or_unknown(mine.get("data_version")),
        "synthetic_data": mine.get("synthetic_data") if isinstance(mine.get("synthetic_data"), bool) else None,
        "seeds": {k: run.get(f"{k}_seed") for k in ("random", "numpy", "torch", "fewshot")},
        "limit": {"limit": run.get("limit"), "offset": run.get("offset") or 0},
        "budget": {"gen_kwargs": run.get("gen_kwargs") or "", "generation_kwargs": config.get("generation_kwargs")},
        "batch_size": run.get("batch_size"),
        "device_class": or_unknown(device),
        "model_args": redact_model_args(run.get("model_args")),
    }


def comparison(provenance: Mapping[str, Any], config: Mapping[str, Any], results: Mapping[str, Any]) -> dict:
    """The keys two cells must share to be compared or averaged (COMPARISON_KEYS)."""
    return {
        "limit": provenance["limit"],
        "budget": provenance["budget"],
        "prompt": prompt_hash(config, results),
        "dataset_fingerprint": provenance["dataset_fingerprint"],
        "patch_set_sha256": provenance["patch_set_sha256"],
    }
