"""Read LEVANTE IRT model records (rds `ModelRecord` or CSV) into item parameters (a1, d, g, u, b) and groups.

mirt's `mod2values` layout: one row per parameter (`group, item, name, value`), items named
`<item_uid>-<instance>`, GROUP rows holding MEAN_1 / COV_11. Difficulty b = -d / a1 (higher = harder).
The reference group is read from the `est` flags: the one group whose MEAN_1 is fixed (not estimated).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from levante_tasks.compare.tables import numeric, read_table
from levante_tasks.errors import LevanteError, display_path, os_error
from levante_tasks.schema.crosswalk import canonical_uid, strip_instance

ITEM_PARAMS = ("a1", "d", "g", "u")
LONG_COLUMNS = {"group", "item", "name", "value"}


@dataclass(frozen=True)
class GroupPrior:
    """Normal ability prior of one calibration group (mirt MEAN_1, COV_11)."""

    name: str
    mean: float
    var: float


@dataclass
class IrtModel:
    """Item parameters and group priors of one unidimensional IRT model (one LEVANTE task)."""

    name: str
    items: pd.DataFrame  # irt_item, item_uid, instance, a1, d, g, u, b (reference group's values)
    groups: list[GroupPrior]  # reference group first
    task: str | None = None
    model_class: str = ""
    itemtype: str = ""
    invariance: str = ""
    prior_assumed: bool = False
    scores: pd.DataFrame | None = None  # run_id, ability, se (calibration EAP)
    data: pd.DataFrame | None = None  # calibration responses, columns = irt items
    data_groups: np.ndarray | None = None
    data_runs: np.ndarray | None = None  # run_id of each calibration data row (`runs` slot)
    notes: list[str] = field(default_factory=list)

    @property
    def reference(self) -> GroupPrior:
        """The reference group: the group whose MEAN_1 is fixed (`est` flags); models are scored with its prior."""
        return self.groups[0]

    def group(self, name: str) -> GroupPrior:
        """The prior of a named group; a missing group is a user error."""
        for prior in self.groups:
            if prior.name == name:
                return prior
        raise LevanteError(
            f"{self.name}: group {name!r} not in model (groups: {[g.name for g in self.groups]})"
        )

    def first_instances(self) -> pd.DataFrame:
        """One row per item_uid (its lowest instance): what a model answering each item once is scored on."""
        ordered = self.items.sort_values(["item_uid", "instance"], kind="stable")
        return ordered.drop_duplicates("item_uid").set_index("item_uid")


def item_table(rows: pd.DataFrame, names_have_instance: bool = True) -> pd.DataFrame:
    """Wide item table from per-item parameter columns a1, d, g, u; adds item_uid, instance and b = -d/a1.

    IRT item names are `<item_uid>-<instance>`; a plain `item_uid` column (`names_have_instance=False`) is
    instance 1. Uids are mapped to the manifest spelling through `levante_tasks.schema.crosswalk`.
    """
    table = rows.copy()
    names = [str(name) for name in table["irt_item"]]
    split = [strip_instance(n) for n in names] if names_have_instance else [(n, 1) for n in names]
    table["item_uid"] = [canonical_uid(uid) for uid, _ in split]
    table["instance"] = [inst for _, inst in split]
    table["b"] = -table["d"] / table["a1"]
    return table[["irt_item", "item_uid", "instance", "a1", "d", "g", "u", "b"]].reset_index(drop=True)


def _scalar(value: object, default: str = "") -> str:
    """One string from an R character vector slot (joined with ',' when longer than one)."""
    if value is None:
        return default
    values = [str(v) for v in np.atleast_1d(np.asarray(value, dtype=object)) if v is not None]
    return ",".join(values) if values else default


def _flag(value: object, source: str) -> bool:
    """An `est` cell as a bool (R's TRUE/FALSE as written by write.csv, Python bools, 0/1)."""
    text = str(value).strip().lower()
    if text in ("true", "t", "1", "1.0"):
        return True
    if text in ("false", "f", "0", "0.0"):
        return False
    raise LevanteError(f"{source}: model_vals est is not TRUE/FALSE ({str(value)[:40]!r})")


def reference_group(vals: pd.DataFrame, names: list[str], source: str) -> str:
    """The group whose MEAN_1 is fixed while every other group's is estimated (mirt's reference group).

    One group is its own reference. Several groups with no `est` column, or with MEAN_1 fixed in none or in
    more than one of them (e.g. a configural model), leave the reference ambiguous: an error, never a guess.
    """
    if len(names) == 1:
        return names[0]
    if "est" not in vals.columns:
        raise LevanteError(
            f"{source}: {len(names)} groups and no est column: cannot tell the reference group "
            "(the one whose MEAN_1 is fixed)"
        )
    means = vals[(vals["item"] == "GROUP") & (vals["name"] == "MEAN_1")]
    estimated = {str(g): _flag(e, source) for g, e in zip(means["group"], means["est"], strict=True)}
    fixed = [name for name in names if not estimated.get(name, True)]
    if len(fixed) != 1:
        raise LevanteError(
            f"{source}: cannot tell the reference group from the est flags: MEAN_1 is fixed in "
            f"{fixed or 'no group'} of {names} (exactly one expected)"
        )
    return fixed[0]


def from_model_vals(
    model_vals: pd.DataFrame, source: str, group_names: list[str] | None = None
) -> tuple[pd.DataFrame, list[GroupPrior]]:
    """Items (reference group's rows) and group priors (reference first) from a `mod2values` table."""
    missing = LONG_COLUMNS - set(model_vals.columns)
    if missing:
        raise LevanteError(f"{source}: model_vals lacks columns {sorted(missing)}")
    vals = model_vals.assign(group=model_vals["group"].astype(str), item=model_vals["item"].astype(str))
    names = list(group_names) if group_names else list(dict.fromkeys(vals["group"]))
    reference = reference_group(vals, names, source)
    names = [reference] + [n for n in names if n != reference]
    priors = []
    for name in names:
        rows = vals[(vals["group"] == name) & (vals["item"] == "GROUP")].set_index("name")["value"]
        if "MEAN_1" not in rows or "COV_11" not in rows:
            raise LevanteError(f"{source}: group {name!r} has no GROUP MEAN_1/COV_11 rows in model_vals")
        priors.append(GroupPrior(name, float(rows["MEAN_1"]), float(rows["COV_11"])))
    ref_rows = vals[(vals["group"] == names[0]) & (vals["item"] != "GROUP")]
    if ref_rows.empty:
        raise LevanteError(f"{source}: model_vals has no item rows for reference group {names[0]!r}")
    wide = ref_rows.pivot_table(index="item", columns="name", values="value", aggfunc="first", sort=False)
    absent = [p for p in ("a1", "d") if p not in wide.columns]
    if absent:
        raise LevanteError(f"{source}: model_vals item rows lack parameters {absent}")
    wide = wide.reindex(columns=list(ITEM_PARAMS)).fillna({"g": 0.0, "u": 1.0})
    order = list(dict.fromkeys(ref_rows["item"]))
    wide = wide.loc[order].rename_axis("irt_item").reset_index()
    return item_table(wide), priors


def read_rds(path: Path) -> IrtModel:
    """Read a ModelRecord `.rds` (S4 slots via `rdata`); an object without `model_vals` is an error."""
    import rdata

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = rdata.read_rds(path)
    except OSError as exc:
        if exc.errno is None:  # gzip.BadGzipFile and friends: not an rds, not a file-system problem
            raise LevanteError(f"{path.name}: not a readable .rds file ({type(exc).__name__}: {exc})") from None
        raise os_error(exc, "reading the IRT model") from None
    except Exception as exc:  # rdata raises many types for non-rds input
        raise LevanteError(f"{path.name}: not a readable .rds file ({type(exc).__name__}: {exc})") from exc
    if isinstance(obj, pd.DataFrame):
        slots: dict[str, object] = {"model_vals": obj}
    elif isinstance(obj, dict):
        slots = dict(obj)
    else:
        slots = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
    model_vals = slots.get("model_vals")
    if not isinstance(model_vals, pd.DataFrame):
        raise LevanteError(f"{path.name}: no model_vals slot (not a LEVANTE ModelRecord)")
    if "value" in model_vals.columns:
        model_vals = model_vals.assign(value=numeric(model_vals, "value", path, key="item"))
    group_names = slots.get("group_names")
    names = [str(g) for g in np.atleast_1d(group_names)] if group_names is not None else None
    items, groups = from_model_vals(model_vals, path.name, names)
    model = IrtModel(
        name=path.stem,
        items=items,
        groups=groups,
        model_class=_scalar(slots.get("model_class")),
        itemtype=_scalar(slots.get("itemtype")),
        invariance=_scalar(slots.get("invariance")),
    )
    scores = slots.get("scores")
    if isinstance(scores, pd.DataFrame) and {"run_id", "ability", "se"} <= set(scores.columns):
        model.scores = pd.DataFrame(
            {
                "run_id": scores["run_id"].astype(str).to_numpy(),
                "ability": scores["ability"].to_numpy(float),
                "se": scores["se"].to_numpy(float),
            }
        )
    data = slots.get("data")
    item_names = slots.get("items")
    if data is not None and item_names is not None:
        matrix = np.asarray(data, dtype=float)
        columns = [str(i) for i in np.atleast_1d(item_names)]
        if matrix.ndim == 2 and matrix.shape[1] == len(columns):
            model.data = pd.DataFrame(matrix, columns=columns)
            groups_slot = slots.get("groups")
            if groups_slot is not None:
                model.data_groups = np.asarray([str(g) for g in np.atleast_1d(groups_slot)])
            runs_slot = slots.get("runs")
            if runs_slot is not None and len(np.atleast_1d(runs_slot)) == len(matrix):
                model.data_runs = np.asarray([str(r) for r in np.atleast_1d(runs_slot)])
    return model


def read_csv(path: Path) -> list[IrtModel]:
    """Read item parameters from CSV: mod2values long layout, or wide (item_uid|item, a1, d, g[, u][, task]).

    A wide CSV carries no group prior: N(0, 1) is assumed and flagged (`prior_assumed`). g must be present
    (LEVANTE fixes it at chance; Redivis item_parameters omit it, so they cannot be used alone).
    """
    table = read_table(path, "IRT model")
    if LONG_COLUMNS <= set(table.columns):
        table["value"] = numeric(table, "value", path, key="item")
        items, groups = from_model_vals(table, path.name)
        return [IrtModel(name=path.stem, items=items, groups=groups)]
    id_col = "item_uid" if "item_uid" in table.columns else "item" if "item" in table.columns else None
    missing = [c for c in ("a1", "d", "g") if c not in table.columns]
    if id_col is None or missing:
        need = (["item_uid"] if id_col is None else []) + missing
        raise LevanteError(
            f"{path.name}: item-parameter CSV lacks columns {need} (or the mod2values columns)"
        )
    for column in ITEM_PARAMS:
        if column in table.columns:
            table[column] = numeric(table, column, path, key=id_col)
    table = table.rename(columns={id_col: "irt_item"})
    if "u" not in table.columns:
        table["u"] = 1.0
    tasks = table["task"].astype(str) if "task" in table.columns else pd.Series([None] * len(table))
    models = []
    for task in dict.fromkeys(tasks):
        part = table[tasks == task] if task is not None else table
        name = f"{path.stem}:{task}" if task is not None else path.stem
        model = IrtModel(
            name=name,
            items=item_table(part, names_have_instance=id_col == "item"),
            groups=[GroupPrior("assumed", 0.0, 1.0)],
            task=task,
        )
        model.prior_assumed = True
        models.append(model)
    return models


def check_model(model: IrtModel, source: str) -> None:
    """Refuse impossible parameters: missing or zero a1/d, asymptotes outside 0 <= g < u <= 1, COV_11 <= 0."""
    items = model.items
    bad = items[~np.isfinite(items[list(ITEM_PARAMS)]).all(axis=1) | (items["a1"] == 0)]
    if not bad.empty:
        raise LevanteError(f"{source}: items with missing or zero parameters: {list(bad['irt_item'][:5])}")
    asymptotes = items[~((items["g"] >= 0) & (items["g"] < items["u"]) & (items["u"] <= 1))]
    if not asymptotes.empty:
        row = asymptotes.iloc[0]
        more = f" (and {len(asymptotes) - 1} more)" if len(asymptotes) > 1 else ""
        raise LevanteError(
            f"{source}: item {row['irt_item']} has g = {row['g']:g}, u = {row['u']:g}; "
            f"probabilities need 0 <= g < u <= 1{more}"
        )
    for group in model.groups:
        if not (np.isfinite(group.mean) and np.isfinite(group.var) and group.var > 0):
            raise LevanteError(
                f"{source}: group {group.name!r} prior MEAN_1 = {group.mean:g}, COV_11 = {group.var:g}; "
                "non-positive COV_11 or a non-finite value"
            )


def read_irt(path: Path) -> list[IrtModel]:
    """Read one IRT input (`.rds` ModelRecord or `.csv`); one model per task it holds."""
    if not path.is_file():
        raise LevanteError(f"{display_path(path)}: IRT model file not found")
    models = [read_rds(path)] if path.suffix.lower() == ".rds" else read_csv(path)
    for model in models:
        check_model(model, path.name)
    return models
