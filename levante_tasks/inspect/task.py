"""One inspect Task per LEVANTE task and variant: the prepared docs of lmms-eval's tasks (same balanced orders per
seed, same controls), inspect's `multiple_choice()` (our order, never shuffled) and `choice()`, plus our record.

Choice items only: inspect's multiple-choice form has no slider answer, so egma-math's number-line slider items
are left out (as in lmms-eval's `_mc` variants). Decoding is the lmms-eval tasks' (`generate_config`: greedy,
temperature 0, 128 new tokens, stop at a blank line), given to inspect as the Task's GenerateConfig. The Task's
metadata holds the run provenance the summary reads; the Task's `version` is the catalogue's `TaskInfo.version`.
The distribution mode `orders=K` (docs/inspect.md) asks each item under option-order seeds 0 .. K-1, replicate r
being seed r's doc from the same builder: one Sample per item and seed, an item's replicates adjacent;
metadata.levante then says `orders: K` (and `seed: 0`, the first replicate).
Bad arguments and missing or damaged data raise LevanteTaskError: a LevanteError that is also inspect's
PrerequisiteError, so `inspect eval` prints its one line (naming the task, the problem and the fix), no traceback.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.dataset import MemoryDataset
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import choice
from inspect_ai.solver import multiple_choice

from levante_tasks import __version__
from levante_tasks.core import docs, generation
from levante_tasks.core.options import DEFAULT_SEEDS, MAX_ORDERS
from levante_tasks.errors import LevanteError
from levante_tasks.inspect.samples import doc_sample, template
from levante_tasks.inspect.scorer import levante_record
from levante_tasks.schema import layout, locales
from levante_tasks.schema.locales import ENGLISH, Locale
from levante_tasks.schema.records import VARIANTS
from levante_tasks.schema.task_source import INSPECT_SCOPE, PACKAGE_ROOT, files_sha256, package_closure
from levante_tasks.schema.tasks import TaskInfo
from levante_tasks.schema.variant import Control, Variant

PROVENANCE_KEY = "levante"  # Task metadata key: {task, lmms_name, seed, variant, [orders,] [locale,] provenance}


class LevanteTaskError(LevanteError, PrerequisiteError):
    """A LEVANTE inspect task that cannot be made; inspect's CLI prints the message alone (no traceback)."""

    def __init__(self, message: str) -> None:
        LevanteError.__init__(self, message)
        self.message = message


def source_files(root: Path = PACKAGE_ROOT) -> list[str]:
    """The package-relative paths whose bytes make `source_sha256`, sorted: `_registry.py` (the @task functions,
    their arguments and defaults), every module of inspect/ and the modules of core/ and schema/ they import,
    transitively (schema.task_source.package_closure with INSPECT_SCOPE: the task's own code, never errors.py,
    the lmms-eval face or other packages)."""
    entry = [root / "_registry.py", *sorted((root / "inspect").glob("*.py"))]
    return sorted(p.resolve().relative_to(root.resolve()).as_posix()
                  for p in package_closure(entry, root, INSPECT_SCOPE))


def source_sha256(root: Path = PACKAGE_ROOT) -> str:
    """The inspect tasks' source hash (audit evidence; the version is `TaskInfo.version`): sha256 over (relative
    path, sha256 of bytes) of `source_files`."""
    return files_sha256([root / rel for rel in source_files(root)], [root])


def provenance(info: TaskInfo, version_name: str, locale: Locale = ENGLISH) -> dict[str, Any]:
    """What the summary records about how a task was made: task version (the catalogue's, also the Task's
    `version`), dataset (of the task's locale), task source hash, this package, inspect_ai."""
    return {
        "task_version": info.version,
        "data_version": version_name,
        "dataset_fingerprint": docs.dataset_fingerprint(info.name, version_name, locale),
        "synthetic_data": docs.dataset_synthetic(info.name, version_name, locale),
        "task_source_sha256": source_sha256(),
        "levante_tasks_version": __version__,
        "inspect_ai_version": version("inspect_ai"),
    }


def generate_config() -> GenerateConfig:
    """The lmms-eval tasks' decoding (core.generation): temperature 0, 128 new tokens, stop at a blank line."""
    temperature = None if generation.DO_SAMPLE else 0.0
    return GenerateConfig(temperature=temperature, max_tokens=generation.MAX_NEW_TOKENS,
                          stop_seqs=list(generation.STOP_SEQUENCES))


def check_args(name: str, seed: Any, variant: Any, unknown: Mapping[str, Any], orders: Any = None) -> list[int]:
    """The option-order seeds valid task arguments ask: `[seed]`, or replicates 0 .. orders-1 with `orders`;
    LevanteTaskError naming the bad argument otherwise (with `orders`, `seed` must stay 0: the replicates are seeds
    0 .. K-1)."""
    seeds = ", ".join(map(str, DEFAULT_SEEDS))
    if unknown:
        raise LevanteTaskError(f"{name}: unknown task argument(s) {', '.join(sorted(unknown))} "
                               f"(expected -T seed={{{seeds}}}, -T orders=1..{MAX_ORDERS}, "
                               f"-T variant={{{', '.join(VARIANTS)}}} and -T locale={{{locales.accepted()}}})")
    if isinstance(seed, bool) or not isinstance(seed, int | str) or str(seed).strip() not in map(str, DEFAULT_SEEDS):
        raise LevanteTaskError(f"{name}: seed={seed!r}: expected one of {seeds} (the option-order seeds of the "
                               f"lmms-eval tasks)")
    if variant not in VARIANTS:
        raise LevanteTaskError(f"{name}: variant={variant!r}: expected one of {', '.join(VARIANTS)}")
    if orders is None:
        return [int(seed)]
    if (isinstance(orders, bool) or not isinstance(orders, int | str) or not str(orders).strip().isdigit()
            or not 1 <= int(orders) <= MAX_ORDERS):
        raise LevanteTaskError(f"{name}: orders={orders!r}: expected a whole number from 1 to {MAX_ORDERS} (each "
                               f"item is asked under option-order seeds 0 .. orders-1)")
    if int(seed):
        raise LevanteTaskError(f"{name}: seed={seed!r} with orders={int(orders)}: orders asks option-order seeds 0 .. "
                               f"{int(orders) - 1}; leave -T seed out")
    return list(range(int(orders)))


def check_replicates(name: str, info: TaskInfo, seeds: list[int], variant: str, language: Locale) -> None:
    """LevanteTaskError unless every seed is one the variant has (seeds past 0, 1, 2 are order replicates of
    original images in English only, as lmms-eval's `_seed3` ...: `schema.variant`), so no log names a variant that
    summarize, verify and compare cannot read."""
    for seed in seeds:
        try:
            Variant(info.name, seed=seed, control=Control(variant), locale=language)
        except ValueError as exc:
            raise LevanteTaskError(f"{name}: orders={len(seeds)} with variant={variant!r}, locale="
                                   f"{language.code!r}: {exc}") from None


def replicate_docs(task: str, seeds: list[int], variant: str, locale: Locale) -> list[dict[str, Any]]:
    """The choice docs of `task` under each of `seeds` (docs.task_docs per seed), item by item: an item's
    replicates are adjacent, so `--limit` keeps whole items when it is a multiple of the seeds."""
    per_seed = [docs.task_docs(task, seed=seed, variant=variant, choice_only=True, locale=locale) for seed in seeds]
    return [doc for replicates in zip(*per_seed, strict=True) for doc in replicates]


def data_problem(name: str, exc: LevanteError) -> LevanteTaskError:
    """Missing or damaged prepared data as one line: the task, the problem, the data dir and the prepare fix."""
    text = str(exc)
    if "levante-tasks prepare" not in text:
        try:
            text += f": {docs.repair_hint(layout.data_version())}"
        except LevanteError:
            text += f": {layout.PREPARE_HINT}"
    if not os.environ.get(layout.DATA_DIR_ENV):
        text += f" ({layout.DATA_DIR_ENV} is not set: the data dir is the user cache dir)"
    return LevanteTaskError(f"{name}: {text}")


def task_locale(name: str, code: Any) -> Locale:
    """The locale of `-T locale=...` (a LEVANTE code: en, de, es-CO, ...); LevanteTaskError naming a bad one."""
    try:
        return locales.locale(str(code))
    except LevanteError as exc:
        raise LevanteTaskError(f"{name}: locale={code!r}: {exc}") from None


def levante_task(info: TaskInfo, seed: Any = 0, variant: Any = "original", locale: Any = "en", orders: Any = None,
                 unknown: Mapping[str, Any] | None = None) -> Task:
    """The inspect Task of one catalogue task: option-order `seed` (0, 1, 2) or `orders` K (each item asked under
    seeds 0 .. K-1, one sample per item and seed), image `variant` and `locale` (the spec names a translated locale
    as `locale`; the leaf name is lmms-eval's, `levante_trog_de`)."""
    name = f"levante_tasks/{info.lmms_name}"
    seeds = check_args(name, seed, variant, unknown or {}, orders)
    language = task_locale(name, locale)
    check_replicates(name, info, seeds, variant, language)
    try:
        task_docs = replicate_docs(info.name, seeds, variant, language)
        samples = [doc_sample(doc, replicated=orders is not None) for doc in task_docs]
        version_name = task_docs[0]["data_version"]
        spec = {"task": info.name, "lmms_name": info.lmms_name, "seed": seeds[0], "variant": variant,
                **({} if orders is None else {"orders": len(seeds)}),
                **({} if language.is_source else {"locale": language.code}),
                "provenance": provenance(info, version_name, language)}
    except LevanteError as exc:
        raise data_problem(name, exc) from None
    return Task(dataset=MemoryDataset(samples, name=Variant(info.name, locale=language).format()),
                solver=multiple_choice(template=template(language)), scorer=[choice(), levante_record()],
                config=generate_config(), metadata={PROVENANCE_KEY: spec}, version=info.version)
