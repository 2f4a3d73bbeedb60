"""One inspect Task per LEVANTE task and variant: the prepared docs of lmms-eval's tasks (same balanced orders per
seed, same controls), inspect's `multiple_choice()` (our order, never shuffled) and `choice()`, plus our record.

Choice items only: inspect's multiple-choice form has no slider answer, so egma-math's number-line slider items
are left out (as in lmms-eval's `_mc` variants). The Task's metadata holds the run provenance the summary reads.
"""

from __future__ import annotations

import hashlib
from importlib.metadata import version
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset
from inspect_ai.scorer import choice
from inspect_ai.solver import multiple_choice

from levante_tasks import __version__
from levante_tasks.harness import docs
from levante_tasks.inspect_ai_tasks.samples import TEMPLATE, doc_sample
from levante_tasks.inspect_ai_tasks.scorer import levante_record
from levante_tasks.schema.records import VARIANTS
from levante_tasks.schema.task_source import PACKAGE_ROOT
from levante_tasks.schema.tasks import TaskInfo

PROVENANCE_KEY = "levante"  # Task metadata key: {task, lmms_name, seed, variant, provenance}
# The source an inspect task is built from: this package's modules and the harness modules it reuses.
SOURCE_FILES = ("inspect_ai_tasks/samples.py", "inspect_ai_tasks/scorer.py", "inspect_ai_tasks/task.py",
                "harness/docs.py", "harness/options.py", "harness/controls.py", "harness/lmms_task.py",
                "harness/parsing.py", "harness/records.py", "data/prompts.py")


def source_sha256() -> str:
    """sha256 over (relative path, sha256 of bytes) of SOURCE_FILES: the inspect tasks' version of their source."""
    digest = hashlib.sha256()
    for rel in SOURCE_FILES:
        digest.update(f"{rel}\0{hashlib.sha256((PACKAGE_ROOT / rel).read_bytes()).hexdigest()}\n".encode())
    return digest.hexdigest()


def provenance(info: TaskInfo, version_name: str) -> dict[str, Any]:
    """What the summary records about how a task was made: dataset, task source, this package, inspect_ai."""
    return {
        "data_version": version_name,
        "dataset_fingerprint": docs.dataset_fingerprint(info.name, version_name),
        "task_source_sha256": source_sha256(),
        "levante_tasks_version": __version__,
        "inspect_ai_version": version("inspect_ai"),
    }


def levante_task(info: TaskInfo, seed: int = 0, variant: str = "original") -> Task:
    """The inspect Task of one catalogue task: option-order `seed` (0, 1, 2, ...) and image `variant`."""
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r}: expected one of {', '.join(VARIANTS)}")
    task_docs = docs.task_docs(info.name, seed=int(seed), variant=variant, choice_only=True)
    version_name = task_docs[0]["data_version"]
    spec = {"task": info.name, "lmms_name": info.lmms_name, "seed": int(seed), "variant": variant,
            "provenance": provenance(info, version_name)}
    return Task(dataset=MemoryDataset([doc_sample(doc) for doc in task_docs], name=info.lmms_name),
                solver=multiple_choice(template=TEMPLATE), scorer=[choice(), levante_record()],
                metadata={PROVENANCE_KEY: spec}, version=1)
