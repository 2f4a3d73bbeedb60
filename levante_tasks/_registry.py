"""inspect_ai entry point (`[project.entry-points.inspect_ai]`): one @task per catalogue task.

`inspect eval levante_tasks/levante_trog --model vllm/... -T seed=1 -T variant=blank` (docs/inspect.md); `-T locale=de`
runs the task in a children's language (`levante_tasks.schema.locales`); `-T orders=8` asks each item under
option-order seeds 0 .. 7 (the distribution mode). The tasks
are made from `levante_tasks.schema.tasks.TASKS`, so a new catalogue row is a new inspect task too. Bad task
arguments (an unknown `-T` name included: inspect would only warn and run the defaults) and missing or damaged
data raise `LevanteTaskError`, which inspect's CLI prints as its one line, without a traceback.

The offline test model API `levante-tiny` (`levante-tiny/clip`, `/vlm`, `/reply`) is registered here too, so that
`inspect eval ... --model levante-tiny/clip` works from inspect's own CLI (inspect_ai loads this entry point when it
looks up a model API). Only its name is registered: the factory imports `levante_tasks.testing.inspect_model`
(torch, the adapters) when a levante-tiny model is created, the way inspect's own providers defer their imports, so
importing this module stays as light as before and no product code runs the test double unless asked to by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inspect_ai import Task, task
from inspect_ai.model import ModelAPI, modelapi

from levante_tasks.schema.markers import TEST_INSPECT_PROVIDER
from levante_tasks.schema.tasks import TASKS, TaskInfo


def _task_function(info: TaskInfo) -> Callable[..., Task]:
    """The @task function of one catalogue task, named like its lmms-eval task (`levante_trog`)."""

    def make(seed: int = 0, variant: str = "original", locale: str = "en", orders: int | None = None,
             **unknown: Any) -> Task:
        from levante_tasks.inspect.task import levante_task

        return levante_task(info, seed=seed, variant=variant, locale=locale, orders=orders, unknown=unknown)

    make.__name__ = make.__qualname__ = info.lmms_name
    make.__doc__ = (f"LEVANTE {info.name}: option-order seed (0, 1, 2) or orders K (each item under seeds 0 .. K-1, "
                    "K <= 32), image variant (original, blank, shuffled) and locale (en, de, es-CO, ...).")
    return task(name=info.lmms_name)(make)


TASK_FUNCTIONS = {info.lmms_name: _task_function(info) for info in TASKS}
globals().update(TASK_FUNCTIONS)
__all__ = [*sorted(TASK_FUNCTIONS), "levante_tiny"]


@modelapi(name=TEST_INSPECT_PROVIDER)
def levante_tiny() -> type[ModelAPI]:
    """The offline test model API (`levante_tasks.testing.inspect_model`), imported only when used."""
    from levante_tasks.testing.inspect_model import LevanteTinyAPI

    return LevanteTinyAPI
