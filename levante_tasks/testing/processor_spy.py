"""A spy on transformers processors: every call appends the text it got and the colours of its pictures to a log.

The compatibility suite (tests/test_compat_models.py) runs upstream lmms-eval model classes in their own process;
`tests/compat_site/sitecustomize.py` installs this spy there when `$LEVANTE_PROCESSOR_SPY` names a log file. With the
colour-coded fixture (`fixture_data`), each line says which pictures, in which order, one request carried, and when
(`time`: which run of a process that ran several); for a batched call (several texts), `pictures_per_text` counts
the processor's picture token in each text, so the flat picture list can be split back into each item's pictures.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from PIL import Image

from levante_tasks.testing.fixture_data import decode_colour

SPY_ENV = "LEVANTE_PROCESSOR_SPY"
_depth = threading.local()  # a processor calling another processor is recorded once, at the outer call


def flat_images(value: Any) -> Iterator[Image.Image]:
    """Every PIL picture in a (nested) processor argument, in order."""
    if isinstance(value, Image.Image):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from flat_images(item)


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [t for t in value if isinstance(t, str)] if isinstance(value, list | tuple) else []


def _wrap(call: Callable[..., Any], log: Path) -> Callable[..., Any]:
    @functools.wraps(call)
    def spied(self: Any, *args: Any, **kwargs: Any) -> Any:
        outer = not getattr(_depth, "busy", False)
        if outer:
            images = kwargs.get("images", args[0] if args and not isinstance(args[0], str | list) else None)
            text = kwargs.get("text", next((a for a in args if isinstance(a, str | list)), None))
            texts, token = _texts(text), getattr(self, "image_token", None)
            line = {"processor": type(self).__name__, "texts": texts,
                    "colours": [decode_colour(image) for image in flat_images(images)],
                    "pictures_per_text": [t.count(token) for t in texts] if isinstance(token, str) else None,
                    "time": time.time()}
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(line) + "\n")
        _depth.busy = True
        try:
            return call(self, *args, **kwargs)
        finally:
            if outer:
                _depth.busy = False

    spied.levante_spy = True  # type: ignore[attr-defined]
    return spied


def install(log: Path) -> None:
    """Spy on `ProcessorMixin.__call__` and on every subclass that defines its own `__call__` (now or later)."""
    from transformers.processing_utils import ProcessorMixin

    def wrap_class(cls: type) -> None:
        call = cls.__dict__.get("__call__")
        if call is not None and not getattr(call, "levante_spy", False):
            cls.__call__ = _wrap(call, log)

    def subclasses(cls: type) -> Iterator[type]:
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    wrap_class(ProcessorMixin)
    for cls in subclasses(ProcessorMixin):
        wrap_class(cls)
    previous = ProcessorMixin.__dict__.get("__init_subclass__")

    def init_subclass(cls: type, **kwargs: Any) -> None:
        if previous is not None:
            previous.__func__(cls, **kwargs)
        wrap_class(cls)

    ProcessorMixin.__init_subclass__ = classmethod(init_subclass)  # type: ignore[assignment]


def read_log(log: Path) -> list[dict[str, Any]]:
    """The calls a spied process recorded (none when it never called a processor)."""
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]
