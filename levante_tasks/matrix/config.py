"""Read and validate a matrix YAML file into dataclasses; every problem is one line naming the file and the key."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from levante_tasks.errors import LevanteError, display_path
from levante_tasks.matrix.slurm_options import SlurmSpec, parse_slurm
from levante_tasks.schema.layout import is_version_name
from levante_tasks.schema.seeds import MAX_ORDERS
from levante_tasks.yaml_file import read_yaml

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
# lmms-eval flags the runner sets itself; `extra_args` may not repeat them.
RESERVED_FLAGS = ("--model", "--model_args", "--tasks", "--batch_size", "--output_path", "--log_samples", "--seed",
                  "--limit", "--device", "--include_path")
TOP_KEYS = {"models", "tasks", "seeds", "limit", "batch_sizes", "device", "num_processes", "extra_args", "env",
            "lmms_eval_module", "data", "compare", "groups", "slurm"}
MODEL_KEYS = {"name", "model", "model_args", "public_id", "revision", "distribution"}
DISTRIBUTION_KEYS = {"orders", "tolerance", "max_orders", "samples", "temperature"}
AUTO = "auto"
UNKNOWN_REVISION = "unknown"
COMMIT = re.compile(r"[0-9a-f]{40}")
# Our lmms-eval models: `revision=<commit>` in their model_args loads that commit (levante_adapters.revision).
REVISION_PINNING_MODELS = {"levante_clip", "levante_vlm_mc"}
DEFAULT_GROUP = "all"


@dataclass(frozen=True)
class Distribution:
    """A model's distribution mode: every item asked under replicate option orders 0..K-1 (`orders`; None for
    `auto`, which adds blocks until the replicate half-width is <= `tolerance` or `max_orders` is reached), each
    order `samples` times at `temperature` (None: the task's greedy decoding)."""

    orders: int | None
    tolerance: float | None = None
    max_orders: int | None = None
    samples: int = 1
    temperature: float | None = None

    @property
    def auto(self) -> bool:
        """Whether the matrix decides K per task (`orders: auto`)."""
        return self.orders is None

    @property
    def most_orders(self) -> int:
        """The largest K this mode may run: `orders`, or auto's `max_orders`."""
        return self.orders if self.orders is not None else self.max_orders or MAX_ORDERS

    def document(self) -> dict[str, Any]:
        """The settings as matrix.json and the report state them."""
        return {"orders": AUTO if self.auto else self.orders, "tolerance": self.tolerance,
                "max_orders": self.max_orders, "samples": self.samples, "temperature": self.temperature}


@dataclass(frozen=True)
class ModelSpec:
    """One model row: a short unique name, the lmms-eval model and its args, and its public identity."""

    name: str
    model: str
    model_args: str
    public_id: str
    revision: str
    group: str = DEFAULT_GROUP
    distribution: Distribution | None = None


@dataclass(frozen=True)
class CompareSpec:
    """The children's data a comparison needs (paths relative to the config file) and its settings."""

    trials: Path
    runs: Path
    irt: tuple[tuple[str | None, Path], ...]  # (TASK[@LANGUAGE] or None, path), as `compare --irt` takes them
    items: Path | None = None
    min_n: int = 10
    n_boot: int = 2000
    seed: int = 0
    across_languages: bool = False


@dataclass(frozen=True)
class MatrixConfig:
    """A whole matrix: models x tasks x seeds under one protocol (limit, device, extra args, data version)."""

    path: Path
    models: tuple[ModelSpec, ...]
    tasks: tuple[str, ...]
    seeds: tuple[int, ...] = (0,)
    limit: float | None = None
    batch_sizes: tuple[int, ...] = (1,)
    device: str | None = None
    num_processes: int = 1
    extra_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    lmms_eval_module: str = "lmms_eval"
    data_dir: Path | None = None
    data_version: str | None = None
    compare: CompareSpec | None = None
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    slurm: SlurmSpec = SlurmSpec()

    @property
    def base(self) -> Path:
        """The config file's folder: relative paths in the config (and in model_args) are read from here."""
        return self.path.parent


class _Reader:
    """Typed access to the YAML mapping; errors name the file and the dotted key."""

    def __init__(self, path: Path) -> None:
        self.shown = display_path(path)  # as the user named it
        self.path = path.absolute()

    def fail(self, key: str, problem: str) -> LevanteError:
        return LevanteError(f"{self.shown}: {key}: {problem}")

    def mapping(self, value: Any, key: str, allowed: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(key, "must be a mapping")
        unknown = sorted(str(k) for k in value if k not in allowed)
        if unknown:
            raise self.fail(f"{key}.{unknown[0]}" if key else unknown[0],
                            f"unknown key (allowed: {', '.join(sorted(allowed))})")
        return value

    def text(self, value: Any, key: str, pattern: re.Pattern[str] | None = None) -> str:
        if isinstance(value, dt.date):  # YAML reads an unquoted 2026-03-24 as a date
            value = value.isoformat()
        if isinstance(value, bool) or not isinstance(value, str | int | float) or not str(value).strip():
            raise self.fail(key, "must be a non-empty string")
        text = str(value).strip()
        if pattern is not None and not pattern.fullmatch(text):
            raise self.fail(key, f"{text!r} is not allowed (letters, digits, '.', '_', '-'; starts with a letter "
                                 "or digit)")
        return text

    def integer(self, value: Any, key: str, minimum: int, maximum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (
                maximum is not None and value > maximum):
            raise self.fail(key, f"must be an integer >= {minimum}" if maximum is None
                            else f"must be an integer from {minimum} to {maximum}, not {value!r}")
        return value

    def positive(self, value: Any, key: str, below: float | None = None) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < (below or float("inf")):
            raise self.fail(key, f"must be a number > 0{f' and < {below:g}' if below else ''}, not {value!r}")
        return float(value)

    def items(self, value: Any, key: str) -> list[Any]:
        if isinstance(value, str | int) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, list) or not value:
            raise self.fail(key, "must be a non-empty list")
        return value

    def path_value(self, value: Any, key: str, must_exist: bool = True) -> Path:
        path = Path(self.text(value, key)).expanduser()
        path = path if path.is_absolute() else self.path.parent / path
        if must_exist and not path.exists():
            raise self.fail(key, f"{display_path(path)}: no such file or folder")
        return path


def _model(reader: _Reader, value: Any, key: str) -> ModelSpec:
    """One entry of `models:`."""
    raw = reader.mapping(value, key, MODEL_KEYS)
    for required in ("name", "model"):
        if required not in raw:
            raise reader.fail(f"{key}.{required}", "missing")
    name = reader.text(raw["name"], f"{key}.name", NAME)
    args = raw.get("model_args", "")
    if isinstance(args, dict):
        args = ",".join(f"{k}={v}" for k, v in args.items())
    if not isinstance(args, str):
        raise reader.fail(f"{key}.model_args", "must be a `k=v,k2=v2` string or a mapping")
    model = reader.text(raw["model"], f"{key}.model")
    args, revision = _pin_revision(reader, key, model, args.strip(), raw.get("revision"))
    distribution = _distribution(reader, raw["distribution"], f"{key}.distribution") if "distribution" in raw else None
    return ModelSpec(name=name, model=model, model_args=args,
                     public_id=reader.text(raw.get("public_id", name), f"{key}.public_id"), revision=revision,
                     distribution=distribution)


def _distribution(reader: _Reader, value: Any, key: str) -> Distribution:
    """A model's `distribution:` (docs/matrix.md, *Response distributions*): `orders: K` (2..32) or `orders: auto`
    with `tolerance` and `max_orders`; `samples` runs per order at `temperature` > 0."""
    raw = reader.mapping(value, key, DISTRIBUTION_KEYS)
    if "orders" not in raw:
        raise reader.fail(f"{key}.orders", f"missing (an integer from 2 to {MAX_ORDERS}, or {AUTO})")
    orders, tolerance, max_orders = raw["orders"], None, None
    if orders == AUTO:
        orders = None
        tolerance = reader.positive(raw.get("tolerance", 0.02), f"{key}.tolerance", below=1)
        max_orders = reader.integer(raw.get("max_orders", MAX_ORDERS), f"{key}.max_orders", 2, MAX_ORDERS)
    else:
        if isinstance(orders, str):
            raise reader.fail(f"{key}.orders", f"must be an integer from 2 to {MAX_ORDERS} or {AUTO}, not {orders!r}")
        orders = reader.integer(orders, f"{key}.orders", 2, MAX_ORDERS)
        extra = next((k for k in ("tolerance", "max_orders") if k in raw), None)
        if extra:
            raise reader.fail(f"{key}.{extra}", f"only with orders: {AUTO} (orders: {orders} runs exactly {orders})")
    samples = reader.integer(raw.get("samples", 1), f"{key}.samples", 1)
    temperature = reader.positive(raw["temperature"], f"{key}.temperature") if raw.get("temperature") is not None \
        else None
    if samples > 1 and temperature is None:
        raise reader.fail(f"{key}.samples", f"{samples} samples per order need a temperature > 0 (greedy runs of one "
                                            "order give the same answer)")
    return Distribution(orders=orders, tolerance=tolerance, max_orders=max_orders, samples=samples,
                        temperature=temperature)


def _pin_revision(reader: _Reader, key: str, model: str, args: str, value: Any) -> tuple[str, str]:
    """model_args and the recorded revision: a `revision` reaches our adapters as `revision=` (they load that
    commit); one given only in model_args is recorded; the two must agree. Other models get model_args as written
    (put `revision=` there when the model accepts it)."""
    inline = next((part.split("=", 1)[1].strip() for part in args.split(",") if part.strip().startswith("revision=")),
                  None)
    if value is None:
        return args, inline or UNKNOWN_REVISION
    revision = reader.text(value, f"{key}.revision")
    if not COMMIT.fullmatch(revision):
        raise reader.fail(f"{key}.revision", f"must be a 40-character hex commit, not {revision[:50]!r}")
    if inline is not None and inline != revision:
        raise reader.fail(f"{key}.revision", f"differs from the revision in model_args ({inline[:50]!r})")
    if inline is None and model in REVISION_PINNING_MODELS:
        args = f"{args},revision={revision}" if args else f"revision={revision}"
    return args, revision


def _irt(reader: _Reader, value: Any, key: str) -> tuple[str | None, Path]:
    """One `compare.irt` entry: `PATH` or `TASK[@LANGUAGE]=PATH` (as `compare --irt`), the task and language
    checked here."""
    from levante_tasks.compare.languages import irt_task

    text = reader.text(value, key)
    spec, sep, rest = text.partition("=")
    if not (sep and spec) or (reader.path.parent / text).exists():
        return None, reader.path_value(text, key)
    try:
        irt_task(spec, key)
    except LevanteError as exc:
        raise reader.fail(key, str(exc).removeprefix(f"{key}: ")) from None
    return spec, reader.path_value(rest, key)


def _compare(reader: _Reader, value: Any) -> CompareSpec:
    """The `compare:` block."""
    raw = reader.mapping(value, "compare", {"trials", "runs", "irt", "items", "min_n", "n_boot", "seed",
                                            "across_languages"})
    for required in ("trials", "runs", "irt"):
        if required not in raw:
            raise reader.fail(f"compare.{required}", "missing")
    trials, runs = reader.path_value(raw["trials"], "compare.trials"), reader.path_value(raw["runs"], "compare.runs")
    irt = tuple(_irt(reader, p, f"compare.irt[{i}]") for i, p in enumerate(reader.items(raw["irt"], "compare.irt")))
    across = raw.get("across_languages", False)
    if not isinstance(across, bool):
        raise reader.fail("compare.across_languages", f"must be true or false, not {across!r}")
    return CompareSpec(trials=trials, runs=runs, irt=irt,
                       items=reader.path_value(raw["items"], "compare.items") if raw.get("items") else None,
                       min_n=reader.integer(raw.get("min_n", 10), "compare.min_n", 1),
                       n_boot=reader.integer(raw.get("n_boot", 2000), "compare.n_boot", 1),
                       seed=reader.integer(raw.get("seed", 0), "compare.seed", 0), across_languages=across)


def _groups(reader: _Reader, value: Any, models: list[ModelSpec]) -> dict[str, tuple[str, ...]]:
    """`groups: {name: [model names]}`: every model in exactly one group (default: one group `all`)."""
    names = [m.name for m in models]
    if value is None:
        return {DEFAULT_GROUP: tuple(names)}
    if not isinstance(value, dict) or not value:
        raise reader.fail("groups", "must be a mapping of group name -> list of model names")
    groups: dict[str, tuple[str, ...]] = {}
    seen: dict[str, str] = {}
    for group, members in value.items():
        group = reader.text(group, "groups", NAME)
        listed = tuple(reader.text(m, f"groups.{group}") for m in reader.items(members, f"groups.{group}"))
        for member in listed:
            if member not in names:
                raise reader.fail(f"groups.{group}", f"{member!r} is not a model name (models: {', '.join(names)})")
            if member in seen:
                raise reader.fail(f"groups.{group}", f"{member!r} is already in group {seen[member]!r} "
                                                     "(a model belongs to one group)")
            seen[member] = group
        groups[group] = listed
    missing = [n for n in names if n not in seen]
    if missing:
        raise reader.fail("groups", f"model {missing[0]!r} is in no group")
    return groups


def _check_distributions(reader: _Reader, models: list[ModelSpec], compare: bool, extra_args: tuple[str, ...]) -> None:
    """What a model's `distribution:` needs from the rest of the config: `auto` a `compare:` section (the children
    decide when the orders are enough); a temperature no `--gen_kwargs` of its own in `extra_args` (the runner sets
    it) and a group whose models all decode alike (the summary compares one decoding per group)."""
    decoding = {}
    for index, model in enumerate(models):
        key = f"models[{index}].distribution"
        spec = model.distribution
        if spec is not None and spec.auto and not compare:
            raise reader.fail(f"{key}.orders", f"{AUTO} needs a compare: section (the children's data decides when "
                                               "the orders are enough); give one, or a number of orders")
        temperature = spec.temperature if spec else None
        if temperature is not None and any(a.split("=", 1)[0] == "--gen_kwargs" for a in extra_args):
            raise reader.fail(f"{key}.temperature", "the runner sets --gen_kwargs for it; drop --gen_kwargs from "
                                                    "extra_args")
        other = decoding.setdefault(model.group, (model.name, temperature, index))
        if other[1] != temperature:
            raise reader.fail(f"models[{index if temperature is not None else other[2]}].distribution.temperature",
                              f"group {model.group!r} holds {other[0]!r}, decoding {_decoding(other[1])}, and "
                              f"{model.name!r}, decoding {_decoding(temperature)}: the summary compares one decoding "
                              "per group; put them in different groups")


def _decoding(temperature: float | None) -> str:
    """How a model decodes, in words."""
    return "greedily" if temperature is None else f"at temperature {temperature:g}"


def _number(reader: _Reader, value: Any, key: str) -> float | None:
    """`limit`: a positive count (>= 1) or fraction (< 1), or null."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
        raise reader.fail(key, "must be a positive number (a count, or a fraction below 1) or null")
    if value >= 1 and value != int(value):  # lmms-eval would run int(value) items while the hash says value
        raise reader.fail(key, f"{value} is neither a whole count nor a fraction below 1")
    return float(value)


def parse_config(raw: Any, path: Path) -> MatrixConfig:
    """Validate a loaded YAML document (see docs/matrix.md for the keys)."""
    reader = _Reader(path)
    path = reader.path
    raw = reader.mapping(raw, "", TOP_KEYS)
    if "models" not in raw:
        raise reader.fail("models", "missing")
    if "tasks" not in raw:
        raise reader.fail("tasks", "missing")
    models = [_model(reader, m, f"models[{i}]") for i, m in enumerate(reader.items(raw["models"], "models"))]
    names = [m.name for m in models]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise reader.fail("models", f"name {duplicate!r} is used twice (names must be unique)")
    tasks = tuple(reader.text(t, f"tasks[{i}]", NAME) for i, t in enumerate(reader.items(raw["tasks"], "tasks")))
    if len(set(tasks)) != len(tasks):
        raise reader.fail("tasks", "a task is listed twice")
    seeds = tuple(reader.integer(s, f"seeds[{i}]", 0)
                  for i, s in enumerate(reader.items(raw.get("seeds", [0]), "seeds")))
    if len(set(seeds)) != len(seeds):
        raise reader.fail("seeds", "a seed is listed twice")
    batch_sizes = tuple(reader.integer(b, f"batch_sizes[{i}]", 1)
                        for i, b in enumerate(reader.items(raw.get("batch_sizes", [1]), "batch_sizes")))
    if list(batch_sizes) != sorted(set(batch_sizes), reverse=True):
        raise reader.fail("batch_sizes", "must be distinct and in decreasing order (the first is tried first, the "
                                         "rest are the out-of-memory fallbacks)")
    extra = raw.get("extra_args", [])
    if not isinstance(extra, list) or not all(isinstance(a, str | int | float) for a in extra):
        raise reader.fail("extra_args", "must be a list of strings (lmms-eval flags and values)")
    extra_args = tuple(str(a) for a in extra)
    clash = next((a for a in extra_args if a.split("=", 1)[0] in RESERVED_FLAGS), None)
    if clash:
        raise reader.fail("extra_args", f"{clash.split('=', 1)[0]} is set by the matrix runner; use the config key")
    env = raw.get("env", {}) or {}
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str | int | float)
                                            for k, v in env.items()):
        raise reader.fail("env", "must be a mapping of variable name -> string")
    data = reader.mapping(raw.get("data", {}) or {}, "data", {"dir", "version"})
    version = reader.text(data["version"], "data.version") if data.get("version") is not None else None
    if version is not None and not is_version_name(version):
        raise reader.fail("data.version", f"{version!r} is not a version folder name")
    module = reader.text(raw.get("lmms_eval_module", "lmms_eval"), "lmms_eval_module")
    if not MODULE.fullmatch(module):
        raise reader.fail("lmms_eval_module", f"{module!r} is not a Python module name")
    slurm = parse_slurm(raw.get("slurm"), [m.name for m in models], reader.fail)
    groups = _groups(reader, raw.get("groups"), models)
    group_of = {m: g for g, members in groups.items() for m in members}
    models = [replace(m, group=group_of[m.name]) for m in models]
    _check_distributions(reader, models, bool(raw.get("compare")), extra_args)
    return MatrixConfig(
        path=path, models=tuple(models), tasks=tasks, seeds=seeds, limit=_number(reader, raw.get("limit"), "limit"),
        batch_sizes=batch_sizes,
        device=reader.text(raw["device"], "device") if raw.get("device") is not None else None,
        num_processes=reader.integer(raw.get("num_processes", 1), "num_processes", 1), extra_args=extra_args,
        env={k: str(v) for k, v in env.items()}, lmms_eval_module=module,
        data_dir=reader.path_value(data["dir"], "data.dir", must_exist=False) if data.get("dir") else None,
        data_version=version, compare=_compare(reader, raw["compare"]) if raw.get("compare") else None,
        groups=groups, slurm=slurm)


def load_config(path: str | Path) -> MatrixConfig:
    """Read and validate the matrix YAML file at `path`."""
    path = Path(path)
    raw = read_yaml(path)
    return parse_config(raw, path)
