"""`python -m levante_tasks.testing.matrix_doubles ARGS`: lmms-eval's CLI with the offline test models registered
plus two that fail on purpose, for the matrix runner's tests (config key `lmms_eval_module`).

`levante_oom` answers like `levante_fixed` but raises torch's out-of-memory error when the batch size exceeds
`max_batch` (model_args `max_batch=1`), as a real model on a too-small GPU would; `levante_crash` raises a plain
error (not memory) on every request; `levante_counted` answers like `levante_fixed` and appends a line to the file
`builds=<path>` each time it is constructed (model loads, counted).
"""

from __future__ import annotations

import os
from typing import Any

import torch
from lmms_eval.api.instance import Instance
from lmms_eval.models.registry_v2 import ModelManifest

from levante_tasks.testing.models import FixedLetterModel

_MODULE = "levante_tasks.testing.matrix_doubles"  # not __name__: it is __main__ when run with -m


class OutOfMemoryModel(FixedLetterModel):
    """FixedLetterModel that runs out of (simulated) GPU memory above `max_batch`."""

    def __init__(self, max_batch: str | int = 1, batch_size: str | int = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_batch, self.batch = int(max_batch), int(batch_size)

    def _check(self) -> None:
        if self.batch > self.max_batch:
            raise torch.OutOfMemoryError(f"CUDA out of memory. Tried to allocate 2.00 GiB (test double: batch size "
                                         f"{self.batch} > {self.max_batch})")

    def generate_until(self, requests: list[Instance]) -> list[str]:
        self._check()
        return super().generate_until(requests)

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        self._check()
        return super().loglikelihood(requests)


class CountedModel(FixedLetterModel):
    """FixedLetterModel that appends `<pid>` to the file `builds` whenever an instance is built."""

    def __init__(self, builds: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        with open(builds, "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()}\n")


class CrashingModel(FixedLetterModel):
    """Fails every request with an error that is not about memory."""

    def generate_until(self, requests: list[Instance]) -> list[str]:
        raise RuntimeError("test double: the model is broken")

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise RuntimeError("test double: the model is broken")


MANIFESTS = (
    ModelManifest(model_id="levante_oom", simple_class_path=f"{_MODULE}.OutOfMemoryModel"),
    ModelManifest(model_id="levante_crash", simple_class_path=f"{_MODULE}.CrashingModel"),
    ModelManifest(model_id="levante_counted", simple_class_path=f"{_MODULE}.CountedModel"),
)


def main() -> None:
    """Register every test model (these and `models.MANIFESTS`), then run lmms-eval's CLI on sys.argv."""
    from lmms_eval.__main__ import cli_evaluate
    from lmms_eval.models import MODEL_REGISTRY_V2

    from levante_tasks.testing import models

    for manifest in (*models.MANIFESTS, *MANIFESTS):
        MODEL_REGISTRY_V2.register_manifest(manifest, overwrite=True)
    cli_evaluate()


if __name__ == "__main__":
    main()
