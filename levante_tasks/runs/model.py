"""The model of an lmms-eval run, one identity for summary and compare: public id, revision, adapter, test model.

From the results file's `config` (model, model_args), lmms-eval's `model_name`, and the first JSON answers of its
samples files (docs/design.md §3c: levante adapters write the model's id and revision there). A local checkpoint
path never becomes a name (outputs carry no absolute paths): its folder name or hub id stands in for it; credentials
in model_args are redacted. A test model is known by its answers, its adapter (the offline doubles) or the mark in
the config.json of the checkpoint folder it ran (lmms-eval's own classes on a tiny_models checkpoint).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from levante_tasks.runs.lmms import SampleLine
from levante_tasks.schema.markers import TEST_DOUBLE_ADAPTERS, TEST_INSPECT_PROVIDER, TEST_MODEL_CONFIG_KEY

UNKNOWN = "unknown"  # a value the run did not record; it differs from any known value in every comparison
HEX40 = re.compile(r"[0-9a-f]{40}")
_SNAPSHOT = re.compile(r"models--(?P<org>[^/]+?)--(?P<name>[^/]+)/snapshots/(?P<rev>[0-9a-f]{40})")


def or_unknown(value: Any) -> str:
    """The value as text; UNKNOWN when it is absent or empty."""
    return UNKNOWN if value in (None, "") else str(value)


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
    """`{"adapter", "public_id", "revision", "test_model"}` of the run's model (test_model: is_test_model, or the
    checkpoint it names is marked: marked_test_checkpoint).

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
    checkpoints = {str(c) for c in (args.get("pretrained"), results.get("model_name")) if c}
    return {"adapter": adapter, "public_id": public_id, "revision": revision,
            "test_model": is_test_model(adapter, answer) or any(map(marked_test_checkpoint, checkpoints))}


def is_test_model(adapter: str, answer: Mapping[str, Any] | None) -> bool:
    """A random-init or scripted test model (schema.markers): its answers' identity says so, or its adapter is
    one of the offline test doubles (lmms-eval model name, or inspect's `inspect_ai:levante-tiny/...`)."""
    provider = adapter.removeprefix("inspect_ai:").split("/", 1)[0]
    return bool((answer or {}).get("test_model")) or adapter in TEST_DOUBLE_ADAPTERS or (
        adapter.startswith("inspect_ai:") and provider == TEST_INSPECT_PROVIDER)


def marked_test_checkpoint(pretrained: str) -> bool:
    """Whether the checkpoint folder a run names (`pretrained=`, as the run's process read it) is a random-init test
    model: its config.json carries TEST_MODEL_CONFIG_KEY (levante_tasks.testing.tiny_models writes it). The mark of
    runs of lmms-eval's own classes (qwen2_vl, llava_hf, ...), whose answers say nothing of their checkpoint; a
    hub id, a folder no longer there or a config.json that is not JSON is no test model."""
    try:
        config = json.loads((Path(pretrained).expanduser() / "config.json").read_text(encoding="utf-8"))
    except (OSError, RuntimeError, ValueError):  # RuntimeError: a `~user` path of no such user
        return False
    return isinstance(config, dict) and TEST_MODEL_CONFIG_KEY in config


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


def find_answer(lines_by_task: Mapping[str, list[SampleLine]]) -> dict[str, Any] | None:
    """The model identity of the first JSON answer that names the model (id or revision), from the first lines of
    each task: the answer's `model` object (docs/design.md §3c), or the answer itself when it is flat."""
    for task in sorted(lines_by_task):
        for line in lines_by_task[task][:3]:
            answer = json_answer(line.data)
            identity = answer.get("model") if answer and isinstance(answer.get("model"), dict) else answer
            if identity and ("model_id" in identity or "revision" in identity):
                return identity
    return None


def model_label(cell: Mapping[str, Any]) -> str:
    """A model row as summary.md, heatmap.png, report.md and comparison.md show it:
    `<public id> @ <revision, 12> (<adapter>)`."""
    return f"{cell['model']} @ {cell['revision'][:12]} ({cell['adapter']})"
