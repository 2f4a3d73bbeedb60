"""The lmms-eval side of the `l0_trace` tasks: a task class that builds its documents, and the doc hooks.

Documents come from `$LEVANTE_L0_DATA` (a folder written by `levante-tasks l0 generate` + `augment`), else they
are generated in memory from `configs/default.yaml` (deterministic, a few seconds, once per process). The task
YAML says which bin it holds (`metadata.l0.bin`). Simple and chat models get the same task
(`levante_tasks.harness.model_kinds.BothKindsTask`), as for the LEVANTE tasks.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from levante_tasks.errors import LevanteError
from levante_tasks.harness.model_kinds import BothKindsTask, RunStopped, generated_text
from levante_tasks.l0 import aggregate, dataset, prompt, store
from levante_tasks.l0.config_file import DEFAULT_CONFIG, load_config
from levante_tasks.l0.scoring import score_response

DATA_ENV = "LEVANTE_L0_DATA"


@functools.lru_cache(maxsize=2)
def _all_docs(data_dir: str | None) -> tuple[str, tuple[dict[str, Any], ...]]:
    """(where the documents came from, every document) for a data folder, or for the default config."""
    if data_dir is None:
        config = load_config(DEFAULT_CONFIG)
        items = dataset.generate(config).items
        pools, _ = dataset.augment(items, config)
        return "the default config", tuple(prompt.build_docs(items, pools, config))
    folder = Path(data_dir)
    manifest = store.read_manifest(folder)
    config = store.manifest_config(folder, manifest)
    items = store.read_rows(folder, manifest, store.PROGRAMS)
    pools = store.read_rows(folder, manifest, store.FEWSHOTS)
    return f"${DATA_ENV}", tuple(prompt.build_docs(items, pools, config))


def load_bin_docs(bin_number: int) -> list[dict[str, Any]]:
    """The documents of one bin, in (program, voter) order."""
    source, docs = _all_docs(os.environ.get(DATA_ENV) or None)
    selected = [dict(doc) for doc in docs if doc["bin"] == bin_number]
    if not selected:
        raise LevanteError(f"bin {bin_number} has no programs in {source} (see the bin counts in its manifest)")
    return selected


class L0TraceTask(BothKindsTask):
    """One bin of L0 trace documents (the YAML's `metadata.l0.bin`), for simple and chat models alike."""

    def download(self, dataset_kwargs: dict | None = None) -> None:
        number = ((self.config.metadata or {}).get("l0") or {}).get("bin")
        if isinstance(number, bool) or not isinstance(number, int):
            raise RunStopped(f"{self.config.task}: the task YAML needs `metadata: {{l0: {{bin: <number>}}}}`")
        try:
            docs = load_bin_docs(number)
        except LevanteError as exc:
            raise RunStopped(f"{self.config.task}: {exc}") from None
        self.use_docs(docs)


def doc_to_visual(doc: Mapping[str, Any]) -> list[Any]:
    """Text-only task: no images."""
    return []


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    """The rendered L0 prompt."""
    return doc["prompt"]


def doc_to_target(doc: Mapping[str, Any]) -> str:
    """The target trace, one line per step."""
    return doc["target"]


def process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """Per-document metrics and the vote record that the majority / pass@k aggregations read."""
    score = score_response(generated_text(results[0]), doc["target"])
    record = aggregate.vote_record(doc["item_id"], int(doc["voter"]), score)
    return {
        "l0_trace_acc": float(score.correct),
        "l0_steps": float(score.steps),
        "l0_parse_failures": float(score.parse_failed),
        "l0_maj_at_5_acc": record,
        "l0_maj_at_5_steps": record,
        "l0_pass_at_5": record,
    }
