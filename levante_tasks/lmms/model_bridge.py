"""One lmms-eval task class for simple and chat models (used by the LEVANTE and the L0 trace tasks).

lmms-eval builds a `class:` task the same way for every model, but simple models (`is_simple = True`) and chat
models read different `generate_until` request layouts: `(ctx, gen_kwargs, doc_to_visual, doc_id, task, split)`
and `(ctx, doc_to_messages, gen_kwargs, doc_id, task, split)`. A `BothKindsTask` request holds, at positions 1
and 2, the generation kwargs as a dict that can also be called as the hook the other layout puts there
(`doc_to_messages` at 1, `doc_to_visual` at 2), so each kind of model finds what it reads. multiple_choice
requests are lmms-eval's own (chat models cannot answer them in either version).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import datasets
from lmms_eval.api.instance import Instance
from lmms_eval.api.task import ConfigurableMessagesTask, ConfigurableTask


def generated_text(result: Any) -> str:
    """The generated text, whatever wrapper lmms-eval used (str, GenerationResult, (str, dict))."""
    if isinstance(result, str):
        return result
    if isinstance(result, (tuple, list)) and result and isinstance(result[0], str):
        return result[0]
    return str(getattr(result, "text", result))


class RunStopped(SystemExit):
    """Stops an lmms-eval run with one line naming the missing data and the command that provides it.

    A SystemExit, because lmms-eval's CLI turns any Exception into a traceback (and, unpatched, exit status 0);
    Python prints a SystemExit's message as one line on stderr and exits with status 1.
    """


class NotInRelease(RunStopped):
    """The data version holds no items of this task: alone it stops the run like RunStopped; as a member of a group
    (`levante`, `levante_mc`, ...) lmms-eval, patched (0014), leaves it out with a warning naming it."""

    skip_in_group = True


class KwargsAndHook(dict):
    """Generation kwargs that can also be called as a doc hook (`doc_to_messages` or `doc_to_visual`)."""

    def __init__(self, kwargs: Mapping[str, Any], hook: Callable[[Any], Any]) -> None:
        super().__init__(kwargs)
        self.hook = hook

    def __call__(self, doc: Any) -> Any:
        return self.hook(doc)

    def __deepcopy__(self, memo: dict[int, Any]) -> KwargsAndHook:
        """Models deep-copy their generation kwargs: copy those, share the hook (never copy the task behind it)."""
        return KwargsAndHook(copy.deepcopy(dict(self), memo), self.hook)


class BothKindsTask(ConfigurableMessagesTask):
    """A `class:` task whose generate_until requests serve simple and chat models alike (module docstring)."""

    def __init__(self, config: dict | None = None, **kwargs: Any) -> None:
        config = {k: v for k, v in (config or {}).items() if k != "class"}
        super().__init__(config=config, **kwargs)

    def use_docs(self, docs: list[dict[str, Any]] | datasets.Dataset) -> None:
        """Make `docs` the task's test split (what `download` builds instead of fetching a dataset)."""
        split = docs if isinstance(docs, datasets.Dataset) else datasets.Dataset.from_list(docs)
        self.dataset = datasets.DatasetDict({self.config.test_split: split})
        self.dataset_no_image = self.dataset

    def construct_requests(self, doc_id: int, ctx: str, **kwargs: Any) -> list[Instance] | Instance:
        """generate_until: one request both kinds of model can read; any other output type as lmms-eval builds it."""
        if self.OUTPUT_TYPE != "generate_until":
            return ConfigurableTask.construct_requests(self, doc_id, ctx, **kwargs)
        generation = self.config.generation_kwargs
        arguments = (ctx, KwargsAndHook(copy.deepcopy(generation), self.doc_to_messages),
                     KwargsAndHook(copy.deepcopy(generation), self.doc_to_visual), doc_id, self.config.task,
                     kwargs["metadata"]["split"])
        return Instance(request_type="generate_until", arguments=arguments, idx=0, **kwargs)
