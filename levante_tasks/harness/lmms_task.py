"""The lmms-eval side of the LEVANTE tasks: a task class that loads prepared data, and the doc_to_* hooks.

lmms-eval 0.7.2 resolves relative `data_files` against the working directory, so the YAMLs name no files:
they point `class:` at `LevanteTask`, whose `download` reads `<data_dir>/<version>/datasets/<task>/` at run
time (see `docs.py`). The variant lives in the YAML's `metadata.levante` mapping
(`task`, `seed`, `variant`, optional `trial_types`). lmms-eval builds a chat-style task for chat models;
`LevanteTask` follows the class lmms-eval was about to build, so chat models get `doc_to_messages`.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import datasets
from lmms_eval.api.task import ConfigurableMessagesTask, ConfigurableTask
from PIL import Image

from levante_tasks.data.images import open_image
from levante_tasks.errors import LevanteError
from levante_tasks.harness import controls, docs, metrics, parsing, prompts, records
from levante_tasks.schema import layout


class DataNotPrepared(SystemExit):
    """Stops an lmms-eval run with one line naming the missing data and the command that prepares it.

    A SystemExit, because lmms-eval's CLI turns any Exception into a traceback (and, unpatched, exit status 0);
    Python prints a SystemExit's message as one line on stderr and exits with status 1.
    """


def load_task_docs(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The docs of one task variant described by `metadata.levante` (task, seed, variant, trial_types)."""
    version = layout.data_version()
    rows = docs.load_rows(spec["task"], version)
    if not rows:
        raise LevanteError(f"{spec['task']}: version {version} has no prepared items (see its dataset.json)")
    wanted = spec.get("trial_types")
    if wanted:
        rows = [r for r in rows if r["trial_type"] in set(wanted)]
        if not rows:
            raise LevanteError(f"{spec['task']}: no items of trial type {', '.join(wanted)} in version {version}")
    return docs.build_docs(
        rows, seed=int(spec.get("seed", 0)), variant=spec.get("variant", "original"), version=version
    )


class _LevanteData:
    """Mixin: replace lmms-eval's dataset download with the prepared LEVANTE docs (no retries, no HF cache)."""

    config: Any

    def __init__(self, config: dict | None = None, **kwargs: Any) -> None:
        config = {k: v for k, v in (config or {}).items() if k != "class"}
        super().__init__(config=config, **kwargs)  # type: ignore[call-arg]

    def download(self, dataset_kwargs: dict | None = None) -> None:
        spec = (self.config.metadata or {}).get("levante") or {}
        try:
            task_docs = load_task_docs(spec)
        except LevanteError as exc:
            raise DataNotPrepared(f"{self.config.task}: {exc}") from None
        self.dataset = datasets.DatasetDict({self.config.test_split: datasets.Dataset.from_list(task_docs)})
        self.dataset_no_image = self.dataset

    def doc_to_visual(self, doc: dict) -> Any:
        """The doc's images; a missing or damaged image (met inside the model's loop) stops the run in one line."""
        try:
            return super().doc_to_visual(doc)  # type: ignore[misc]
        except LevanteError as exc:
            hint = docs.repair_hint(doc.get("data_version", "VERSION"))
            raise DataNotPrepared(f"{self.config.task}: {exc}: {hint}") from None


class LevanteMessagesTask(_LevanteData, ConfigurableMessagesTask):
    """The LEVANTE task as lmms-eval builds it for chat models."""


def _requested_task_class() -> type | None:
    """The task class lmms-eval's loader chose for this model kind (`TaskObj` in the calling frames)."""
    frame = sys._getframe(1)
    for _ in range(8):
        if frame is None:
            return None
        candidate = frame.f_locals.get("TaskObj")
        if isinstance(candidate, type):
            return candidate
        frame = frame.f_back
    return None


class LevanteTask(_LevanteData, ConfigurableTask):
    """The LEVANTE task for simple models; builds a `LevanteMessagesTask` when lmms-eval asked for chat."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        requested = _requested_task_class()
        if cls is LevanteTask and requested is not None and issubclass(requested, ConfigurableMessagesTask):
            return LevanteMessagesTask(*args, **kwargs)
        return super().__new__(cls)


def doc_to_visual(doc: Mapping[str, Any]) -> list[Image.Image]:
    """Images in the order the prompt numbers them: context first (`<image0>`), then options as presented."""
    root = docs.version_root(doc)
    return controls.apply_variant(doc, [open_image(root, rel) for rel in doc["visual_paths"]])


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    """The LEVANTE prompt with the configured pre/post text."""
    kwargs = lmms_eval_specific_kwargs or {}
    return prompts.render(doc, kwargs.get("pre_prompt", ""), kwargs.get("post_prompt", ""))


def doc_to_target(doc: Mapping[str, Any]) -> str:
    """The gold letter as presented (the target number for slider items)."""
    return doc["target_letter"] or str(doc["answer"])


def doc_to_choice(doc: Mapping[str, Any]) -> list[str]:
    """multiple_choice continuations: the letters in presented order."""
    return list(doc["letters"])


def doc_to_target_index(doc: Mapping[str, Any]) -> int:
    """multiple_choice gold: the position of the correct option."""
    return list(doc["letters"]).index(doc["target_letter"])


def _text(result: Any) -> str:
    """The generated text, whatever wrapper lmms-eval used (str, GenerationResult, (str, dict))."""
    if isinstance(result, str):
        return result
    if isinstance(result, (tuple, list)) and result and isinstance(result[0], str):
        return result[0]
    return str(getattr(result, "text", result))


def _loss(result: Any) -> float:
    """The loss of one multiple_choice option: (loss, greedy), or its stringified form from unpatched 0.7.x."""
    if isinstance(result, str):
        result = ast.literal_eval(result)
    if isinstance(result, (tuple, list)):
        result = result[0]
    return float(result)


def process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """generate_until: parse the answer (letter, scores JSON, or slider number) and build the item record."""
    text = _text(results[0])
    if doc["response_format"] == "slider":
        position, method = parsing.parse_number(text)
        return metrics.item_metrics(records.slider_record(doc, position, method))
    option_texts = [doc["options"][i] for i in doc["presented_order"]] if doc["option_kind"] != "image" else []
    parsed = parsing.parse_choice(text, doc["letters"], option_texts)
    return metrics.item_metrics(records.choice_record(doc, parsed))


def process_results_mc(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """multiple_choice: the option with the lowest loss is the choice; scores stored as -loss."""
    return metrics.item_metrics(records.loss_record(doc, [_loss(r) for r in results]))
