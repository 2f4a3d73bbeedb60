"""The config's `slurm:` block: sbatch resources for the cells (defaults, per model) and for the end step.

Resources never change a cell's output, so none of this is in a cell's hash.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

# config key -> sbatch option
OPTION_OF = {"partition": "--partition", "gres": "--gres", "time": "--time", "mem": "--mem",
             "cpus": "--cpus-per-task", "qos": "--qos", "account": "--account", "job_name": "--job-name"}
RESOURCE_KEYS = {*OPTION_OF, "throttle", "options"}
_WORD = re.compile(r"^[^\s'\"\\`$;&|<>]+$")


@dataclass(frozen=True)
class Resources:
    """sbatch options of one kind of job; None = not set (inherit, or Slurm's default)."""

    partition: str | None = None
    gres: str | None = None
    time: str | None = None
    mem: str | None = None
    cpus: int | None = None
    qos: str | None = None
    account: str | None = None
    job_name: str | None = None
    throttle: int | None = None  # at most this many tasks of one array run at once (`--array=...%N`)
    options: tuple[str, ...] = ()  # more sbatch options, as written (`--constraint=a100`)

    def over(self, base: Resources) -> Resources:
        """These settings over `base`'s (options: base's, then these)."""
        merged = {f.name: getattr(self, f.name) if getattr(self, f.name) is not None else getattr(base, f.name)
                  for f in fields(self) if f.name != "options"}
        return Resources(**merged, options=(*base.options, *self.options))

    def sbatch_args(self) -> list[str]:
        """The sbatch options (without --array and the throttle)."""
        args = [f"{flag}={getattr(self, key)}" for key, flag in OPTION_OF.items() if getattr(self, key) is not None]
        return [*args, *self.options]


@dataclass(frozen=True)
class SlurmSpec:
    """Defaults for every cell, overrides per model name, and the end step's settings over the defaults."""

    defaults: Resources = Resources()
    models: tuple[tuple[str, Resources], ...] = ()
    end_step: Resources = Resources()

    def for_model(self, name: str, gpus: int | None) -> Resources:
        """A model's cells: its overrides over the defaults; `--gres=gpu:N` for a CUDA device unless set."""
        own = dict(self.models).get(name, Resources())
        resources = own.over(self.defaults)
        return resources if resources.gres or gpus is None else replace(resources, gres=f"gpu:{gpus}")

    def time_key(self, model: str | None = None, end_step: bool = False) -> str:
        """The config key that sets the time limit of a model's jobs (any model's: None) or of the end step: its
        own `time` where it sets one, else the defaults' `slurm.time` (also when the defaults set none either)."""
        if end_step and self.end_step.time is not None:
            return "slurm.end_step.time"
        if model is not None and dict(self.models).get(model, Resources()).time is not None:
            return f"slurm.models.{model}.time"
        return "slurm.time"

    def for_end_step(self) -> Resources:
        """The end step runs no cell (`--report-only`): the defaults without their gres and options (GPU
        constraints such as `--constraint=a100`), unless `end_step` sets its own."""
        return self.end_step.over(replace(self.defaults, gres=None, options=()))


Fail = Callable[[str, str], Exception]


def _resources(raw: Any, key: str, fail: Fail) -> Resources:
    """One mapping of resource keys."""
    if not isinstance(raw, dict):
        raise fail(key, "must be a mapping")
    unknown = sorted(str(k) for k in raw if k not in RESOURCE_KEYS)
    if unknown:
        raise fail(f"{key}.{unknown[0]}", f"unknown key (allowed: {', '.join(sorted(RESOURCE_KEYS))})")
    values: dict[str, Any] = {}
    for name, value in raw.items():
        where = f"{key}.{name}"
        if name in ("cpus", "throttle"):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise fail(where, "must be an integer >= 1")
            values[name] = value
        elif name == "options":
            values[name] = _options(value, where, fail)
        else:
            text = str(value).strip() if isinstance(value, str | int) and not isinstance(value, bool) else ""
            if not _WORD.fullmatch(text):
                raise fail(where, "must be one word (no spaces or shell characters)")
            values[name] = text
    return Resources(**values)


def _options(value: Any, key: str, fail: Fail) -> tuple[str, ...]:
    """A list of sbatch options such as `--constraint=a100`."""
    if not isinstance(value, list) or not all(isinstance(s, str) and s.startswith("--") and "\n" not in s
                                              for s in value):
        raise fail(key, "must be a list of sbatch options such as --constraint=a100")
    if any(s.split("=", 1)[0] in ("--array", "--dependency", "--output", "--error", "--open-mode") for s in value):
        raise fail(key, "--array, --dependency, --output, --error and --open-mode are set by `--submit`")
    return tuple(value)


def parse_slurm(raw: Any, model_names: list[str], fail: Fail) -> SlurmSpec:
    """The `slurm:` block (a mapping; a plain list of sbatch options is short for `options:`)."""
    if raw is None:
        return SlurmSpec()
    if isinstance(raw, list):
        return SlurmSpec(defaults=Resources(options=_options(raw, "slurm", fail)))
    if not isinstance(raw, dict):
        raise fail("slurm", "must be a mapping (partition, gres, time, ..., models, end_step)")
    defaults = _resources({k: v for k, v in raw.items() if k not in ("models", "end_step")}, "slurm", fail)
    models = raw.get("models") or {}
    if not isinstance(models, dict):
        raise fail("slurm.models", "must be a mapping of model name -> resources")
    per_model = []
    for name, value in models.items():
        if name not in model_names:
            raise fail("slurm.models", f"{name!r} is not a model name (models: {', '.join(model_names)})")
        per_model.append((str(name), _resources(value, f"slurm.models.{name}", fail)))
    end = _resources(raw.get("end_step") or {}, "slurm.end_step", fail)
    if end.throttle is not None:
        raise fail("slurm.end_step.throttle", "the end step is one job, not an array")
    return SlurmSpec(defaults=defaults, models=tuple(per_model), end_step=end)
