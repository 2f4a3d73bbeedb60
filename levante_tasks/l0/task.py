"""The lmms-eval side of the `l0_trace` tasks: a task class that builds its documents, and the doc hooks.

Documents come from `$LEVANTE_L0_DATA` (a folder written by `levante-tasks l0 generate` + `augment`), else they
are the default dataset: the programs `configs/default.yaml` draws, shipped with the package (`default_data`), with
their demonstration pools drawn in memory once per process (deterministic, ~0.5 s). The task
YAML says which bin it holds (`metadata.l0.bin`); a task builds only that bin's documents, one program at a
time, into an Arrow file that its dataset memory-maps. Simple and chat models get the same task
(`levante_tasks.lmms.model_bridge.BothKindsTask`), as for the LEVANTE tasks.
"""

from __future__ import annotations

import functools
import itertools
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets
from datasets.arrow_writer import ArrowWriter
from lmms_eval.api.instance import Instance

from levante_tasks.errors import LevanteError
from levante_tasks.l0 import aggregate, backends, budget, dataset, default_data, prompt, store
from levante_tasks.l0.config import GenConfig
from levante_tasks.l0.config_file import DEFAULT_CONFIG, load_config
from levante_tasks.l0.scoring import score_response
from levante_tasks.lmms.model_bridge import BothKindsTask, RunStopped, generated_text

DATA_ENV = "LEVANTE_L0_DATA"
THINKING_ENV = "LEVANTE_L0_THINKING"  # 1: budgets for thinking models (x20, capped by the sequence length)
MAX_SEQ_LEN_ENV = "LEVANTE_L0_MAX_SEQ_LEN"  # the cap's sequence length (L0-Bench: 32768)
TOKENIZER_ENV = "LEVANTE_L0_TOKENIZER"  # a local Hugging Face tokenizer to count budget tokens with
PROMPT_ENV = "LEVANTE_L0_PROMPT"  # the prompt variant (prompt.PROMPT_VARIANTS; default: L0-Bench's default prompt)
PAPER_SPLIT = "paper"  # `metadata.l0.split` of the l0_trace_paper group's tasks: a split of L0-Bench's table
PAPER_PROFILE = "upstream"  # the only profile whose numbers that table can be compared with (docs/l0.md)
PAPER_PROMPT = "default"  # the only prompt variant that table was measured with
ARROW_BATCH_ROWS = 256  # documents held in memory while the Arrow file is written
_DOC_FOLDERS: list[tempfile.TemporaryDirectory] = []  # the tasks' Arrow files, kept until the process exits


def budget_settings() -> dict[str, Any]:
    """The budget settings from the environment (recorded in the task's metadata), one-line errors."""
    thinking = os.environ.get(THINKING_ENV, "0")
    if thinking not in ("0", "1"):
        raise LevanteError(f"${THINKING_ENV}: expected 0 or 1, got {thinking!r}")
    length = os.environ.get(MAX_SEQ_LEN_ENV, str(budget.MAX_SEQ_LEN))
    if not length.isdigit() or int(length) < 1:
        raise LevanteError(f"${MAX_SEQ_LEN_ENV}: expected a positive integer, got {length!r}")
    tokenizer = os.environ.get(TOKENIZER_ENV) or None
    return {"thinking": thinking == "1", "max_seq_len": int(length),
            "tokens": "characters" if tokenizer is None else Path(tokenizer).name}


def prompt_variant() -> str:
    """The prompt variant from the environment (recorded in the task's metadata), a one-line error if unknown."""
    variant = os.environ.get(PROMPT_ENV) or "default"
    if variant not in prompt.PROMPT_VARIANTS:
        raise LevanteError(f"${PROMPT_ENV}: expected one of {', '.join(prompt.PROMPT_VARIANTS)}, got {variant!r}")
    return variant


def _token_counter() -> Callable[[str], int]:
    """Characters (an upper bound), or the tokens of $LEVANTE_L0_TOKENIZER (L0-Bench counts with the model's)."""
    name = os.environ.get(TOKENIZER_ENV) or None
    if name is None:
        return len
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise LevanteError(f"${TOKENIZER_ENV}: cannot load a tokenizer from {name!r} ({type(exc).__name__})") from None
    return lambda text: len(tokenizer.encode(text))


def with_budgets(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The documents with their own `max_new_tokens` (L0-Bench's per-document rule and, under profile upstream,
    its per-request cap; `budget.py`) and whether the cap lowered it (`budget_capped`)."""
    return list(budgeted(docs))


def budgeted(docs: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """`with_budgets`, one document at a time."""
    settings, count = budget_settings(), _token_counter()
    for doc in docs:
        wanted = budget.token_budget(doc["target"].split("\n"), doc["prompt"], count, settings["thinking"],
                                     settings["max_seq_len"])
        cap = budget.request_cap(doc["profile"])
        doc["max_new_tokens"] = wanted if cap is None else min(wanted, cap)
        doc["budget_capped"] = doc["max_new_tokens"] < wanted
        yield doc


@functools.lru_cache(maxsize=1)
def _default_rows() -> tuple[GenConfig, list[dict[str, Any]], list[dict[str, Any]]]:
    """The default config's programs (shipped: `default_data`) and their demonstration pools, drawn in memory
    once per process."""
    config = load_config(DEFAULT_CONFIG)
    items = default_data.read_programs()
    pools, _ = dataset.augment(items, config)
    return config, items, pools


def _row_id(line: str) -> str:
    """The id of a data-file line without parsing it: every row is written starting `{"id":"<id>",`."""
    return line.split('"', 4)[3]


def bin_docs(data_dir: str | None, bin_number: int,
             variant: str = "default") -> tuple[str, Iterator[dict[str, Any]]]:
    """(where the documents come from, the documents of one bin in (program, voter) order with prompt `variant`,
    built one program at a time: no other bin's documents and no whole data file are held in memory)."""
    if data_dir is None:
        config, all_items, all_pools = _default_rows()
        items = [item for item in all_items if item["bin"] == bin_number]
        ids = {item["id"] for item in items}
        return "the default config", _walk(items, (pool for pool in all_pools if pool["id"] in ids), config, variant)
    folder = Path(data_dir)
    manifest = store.read_manifest(folder)
    config = store.manifest_config(folder, manifest)
    marker = f'"bin":{bin_number},'  # rows start `{"id":"<id>","bin":<n>,`: skip other bins unparsed

    def bin_items() -> Iterator[dict[str, Any]]:
        rows = store.iter_rows(folder, manifest, store.PROGRAMS,
                               lambda line: line.startswith(marker, len(_row_id(line)) + len('{"id":"",')))
        return (row for row in rows if row["bin"] == bin_number)

    ids = {item["id"] for item in bin_items()}
    pools = store.iter_rows(folder, manifest, store.FEWSHOTS, lambda line: _row_id(line) in ids)
    return f"${DATA_ENV}", _walk(bin_items(), pools, config, variant)


def _walk(items: Iterable[dict[str, Any]], pools: Iterator[dict[str, Any]], config: GenConfig,
          variant: str) -> Iterator[dict[str, Any]]:
    """Documents item by item; `pools` holds the items' pools in item order (as augment writes them), less
    those of dropped items."""
    pending = next(pools, None)
    for item in items:
        if pending is not None and pending["id"] == item["id"]:
            yield from prompt.build_docs([item], [pending], config, variant)
            pending = next(pools, None)


def arrow_docs(docs: Iterable[dict[str, Any]]) -> datasets.Dataset:
    """The documents written to an Arrow file as they come and read back memory-mapped (the file lives in a
    temporary folder removed when the process exits)."""
    folder = tempfile.TemporaryDirectory(prefix="levante-l0-docs-")
    _DOC_FOLDERS.append(folder)
    path = str(Path(folder.name) / "docs.arrow")
    with ArrowWriter(path=path, writer_batch_size=ARROW_BATCH_ROWS) as writer:
        for doc in docs:
            writer.write(doc)
        writer.finalize()
    return datasets.Dataset.from_file(path)


def load_bin_docs(bin_number: int) -> list[dict[str, Any]]:
    """The documents of one bin, in (program, voter) order, as a list (the task itself streams them)."""
    source, docs = bin_docs(os.environ.get(DATA_ENV) or None, bin_number, prompt_variant())
    selected = list(docs)
    if not selected:
        raise LevanteError(f"bin {bin_number} has no programs in {source} (see the bin counts in its manifest)")
    return selected


def paper_label(task_name: str, profile: str, variant: str = PAPER_PROMPT) -> str | None:
    """The alias a paper-split task gets on data of another profile or with another prompt variant (None when
    neither): its results row and lmms-eval's printed table say that its numbers (and the l0_trace_paper row
    above them) are not L0-Bench's table's."""
    gaps = [(f"{profile}-profile data", f"profile {PAPER_PROFILE}")] if profile != PAPER_PROFILE else []
    if variant != PAPER_PROMPT:
        gaps.append((f"prompt {variant}", f"prompt {PAPER_PROMPT}"))
    if not gaps:
        return None
    return (f"{task_name} [{', '.join(used for used, _ in gaps)}: not comparable with L0-Bench's table, needs "
            f"{' and '.join(needed for _, needed in gaps)}]")


class L0TraceTask(BothKindsTask):
    """One bin of L0 trace documents (the YAML's `metadata.l0.bin`), for simple and chat models alike."""

    def download(self, dataset_kwargs: dict | None = None) -> None:
        number = ((self.config.metadata or {}).get("l0") or {}).get("bin")
        if isinstance(number, bool) or not isinstance(number, int):
            raise RunStopped(f"{self.config.task}: the task YAML needs `metadata: {{l0: {{bin: <number>}}}}`")
        try:
            settings, variant = budget_settings(), prompt_variant()
            source, docs = bin_docs(os.environ.get(DATA_ENV) or None, number, variant)
            first = next(docs, None)
            if first is None:
                raise LevanteError(f"bin {number} has no programs in {source} (see the bin counts in its manifest)")
            self.use_docs(arrow_docs(budgeted(itertools.chain([first], docs))))
        except LevanteError as exc:
            raise RunStopped(f"{self.config.task}: {exc}") from None
        profile = first["profile"]
        # lmms-eval writes the task config into results.json: the profile, the budget rule, the prompt and how each
        # model class takes the stop string and budgets travel with the scores
        l0 = {**self.config.metadata["l0"], "profile": profile, "prompt": variant,
              "budget": {**settings, "request_cap": budget.request_cap(profile)}, "backends": backends.NOTES}
        if l0.get("split") == PAPER_SPLIT:
            label = paper_label(self.config.task, profile, variant)
            l0["comparable_with_paper"] = label is None
            if label is not None:
                self.config.task_alias = label
        self.config.metadata = {**self.config.metadata, "l0": l0}

    def construct_requests(self, doc_id: int, ctx: str, **kwargs: Any) -> list[Instance] | Instance:
        """The request with this document's own max_new_tokens (unless `--gen_kwargs max_new_tokens=N` set one)."""
        request = super().construct_requests(doc_id, ctx, **kwargs)
        doc = self.dataset[self.config.test_split][doc_id]
        for generation in request.arguments[1:3]:
            generation.setdefault("max_new_tokens", doc["max_new_tokens"])
        return request


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
    record = aggregate.vote_record(doc["item_id"], int(doc["voter"]), score, doc.get("profile", "default"))
    record.update({key: doc[key] for key in BUDGET_FIELDS if key in doc})
    return {"l0_parse_failures": float(score.parse_failed), **dict.fromkeys(RECORD_METRICS, record)}


BUDGET_FIELDS = ("max_new_tokens", "budget_capped")  # the task's budget for the document (`with_budgets`)
RECORD_METRICS = ("l0_trace_acc", "l0_steps", "l0_programs", "l0_programs_dropped",
                  *(f"l0_{m}_at_{k}{s}" for k in (5, 15, 31)
                    for m, s in (("maj", "_acc"), ("maj", "_steps"), ("pass", ""))))
