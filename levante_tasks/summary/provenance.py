"""Provenance of one task in one lmms-eval run, the keys that must agree before cells are compared, and the model.

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
from pathlib import Path
from typing import Any

from levante_tasks.schema.markers import TEST_DOUBLE_ADAPTERS, TEST_INSPECT_PROVIDER
from levante_tasks.schema.task_source import task_source_sha256  # noqa: F401 (verify recomputes it)

UNKNOWN = "unknown"
COMPARISON_KEYS = ("limit", "budget", "prompt", "dataset_fingerprint", "patch_set_sha256")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")
HEX40 = re.compile(r"[0-9a-f]{40}")
_SNAPSHOT = re.compile(r"models--(?P<org>[^/]+?)--(?P<name>[^/]+)/snapshots/(?P<rev>[0-9a-f]{40})")


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


def or_unknown(value: Any) -> str:
    """The value as text; UNKNOWN when it is absent or empty."""
    return UNKNOWN if value in (None, "") else str(value)


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


# ------------------------------------------------------------------ the model


def path_like(value: str) -> bool:
    """Whether a model name is a local path (absolute, home, relative or Windows-style), never written out as is."""
    return value.startswith(("/", "~", "./", "../")) or "\\" in value or Path(value).is_absolute()


def local_name(value: str) -> tuple[str, str | None]:
    """(public name, revision) of a local checkpoint path: a hub-cache snapshot gives its id and commit."""
    snapshot = _SNAPSHOT.search(value.replace("\\", "/"))
    if snapshot:
        return f"{snapshot['org']}/{snapshot['name']}", snapshot["rev"]
    return Path(value.rstrip("/\\")).name or UNKNOWN, None


def parse_model_args(value: Any) -> dict[str, str]:
    """`k=v,k=v` (or a dict) -> dict of strings."""
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    pairs = (part.partition("=") for part in str(value or "").split(",") if part.strip())
    return {k.strip(): v.strip() for k, sep, v in pairs if sep}


_SECRET_ARG = re.compile(r"(^|_)(api_?key|key|token|secret|password|passwd|credentials?)$", re.I)


def redact_model_args(value: Any) -> str:
    """model_args with local paths replaced by their public name (never an absolute path) and credentials
    (`hf_token=`, `api_key=`, ...) by `<redacted>`."""
    args = parse_model_args(value)
    return ",".join(f"{k}={'<redacted>' if _SECRET_ARG.search(k) else local_name(v)[0] if path_like(v) else v}"
                    for k, v in args.items())


def model_identity(results: Mapping[str, Any], answer: Mapping[str, Any] | None) -> dict[str, Any]:
    """`{"adapter", "public_id", "revision", "test_model"}` of the run's model (test_model: is_test_model).

    Public id: `model_id=` in model_args, else the id the model wrote into its JSON answers (levante adapters),
    else lmms-eval's model name (a local path becomes its folder name or hub id), else the adapter with its
    model_args. Revision: a 40-hex `revision=`, else the answers' revision, else a hub snapshot path's commit,
    else "unknown". A scoring mode (`scoring=` in model_args, or the answers' `scoring`, e.g. levante_vlm_mc's
    `yes_no`) is part of the adapter (`levante_vlm_mc[scoring=yes_no]`), so runs of one checkpoint scored two ways
    are two models in every summary, never one.
    """
    run = results["config"]
    adapter = or_unknown(run.get("model") or results.get("model_source"))
    args = parse_model_args(run.get("model_args"))
    answer = answer or {}
    scoring = args.get("scoring") or answer.get("scoring")
    if scoring:
        adapter = f"{adapter}[scoring={scoring}]"
    path_rev = None
    name = str(results.get("model_name") or args.get("pretrained") or "")
    if name and path_like(name):
        name, path_rev = local_name(name)
    public_id = str(args.get("model_id") or answer.get("model_id") or name)
    if path_like(public_id):
        public_id = local_name(public_id)[0]
    if not public_id:
        public_id = f"{adapter}[{redact_model_args(run.get('model_args'))}]" if args else adapter
    revision = next((r for r in (args.get("revision"), answer.get("revision"), path_rev)
                     if isinstance(r, str) and HEX40.fullmatch(r)), UNKNOWN)
    return {"adapter": adapter, "public_id": public_id, "revision": revision,
            "test_model": is_test_model(adapter, answer)}


def is_test_model(adapter: str, answer: Mapping[str, Any] | None) -> bool:
    """A random-init or scripted test model (schema.markers): its answers' identity says so, or its adapter is
    one of the offline test doubles (lmms-eval model name, or inspect's `inspect_ai:levante-tiny/...`)."""
    provider = adapter.removeprefix("inspect_ai:").split("/", 1)[0]
    return bool((answer or {}).get("test_model")) or adapter in TEST_DOUBLE_ADAPTERS or (
        adapter.startswith("inspect_ai:") and provider == TEST_INSPECT_PROVIDER)


def json_answer(line: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON object a model answered with (docs/design.md §3c), if the samples line holds one."""
    response = line.get("filtered_resps")
    if isinstance(response, list) and len(response) == 1:
        response = response[0]
    if not isinstance(response, str) or not response.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(response)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
