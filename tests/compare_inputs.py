"""Inputs for the compare tests built from the shared IRT fixture (trog): trials, canonical items, records."""

from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from shared_paths import irt_fixture_dir

from levante_tasks.compare.pipeline import Settings, run_compare


def trog_trials() -> pd.DataFrame:
    """The fixture's trog trials as text (distractors as comma lists in the manifest's order): a copy of its one
    read, which the caller may change."""
    return _trog_trials().copy()


@functools.cache
def _trog_trials() -> pd.DataFrame:
    """The fixture's trog trials, read once per test process (every compare test starts from them; read only)."""
    trials = pd.read_csv(irt_fixture_dir() / "trials.csv", dtype=str, keep_default_na=False)
    return trials[trials["task_id"] == "trog"].reset_index(drop=True)


def canonical(trials: pd.DataFrame) -> dict[str, list[str]]:
    """[answer] + distractors as the unshuffled fixture lists them (the manifest's order)."""
    return {u: [a, *d.split(",")] for u, a, d in zip(trials["item_uid"], trials["answer"], trials["distractors"],
                                                     strict=True)}


def write_items(options: dict[str, list[str]], path: Path) -> Path:
    """An items CSV: item_uid and options as a JSON list."""
    pd.DataFrame({"item_uid": list(options), "options": [json.dumps(o) for o in options.values()]}).to_csv(
        path, index=False)
    return path


def shuffle_distractors(trials: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Every trial lists its distractors in its own random order, as a comma list or a Python-dict string."""
    rng = np.random.default_rng(seed)
    listed = []
    for k, text in enumerate(trials["distractors"]):
        parts = text.split(",")
        order = [parts[j] for j in rng.permutation(len(parts))]
        listed.append("{" + ", ".join(f"'{j}': '{v}'" for j, v in enumerate(order)) + "}" if k % 2 else ",".join(order))
    return trials.assign(distractors=listed)


def records(path: Path, extra: list[dict] | None = None) -> Path:
    """Two trog models with option scores: `aligned` (right on items easier than 0) and `noise`."""
    params = pd.read_csv(irt_fixture_dir() / "true_item_params.csv")
    trog = params[params["task"] == "trog"]
    rng = np.random.default_rng(0)
    rows = []
    for uid, b in zip(trog["item_uid"], trog["b"], strict=True):
        rows.append({"model": "aligned", "task": "trog", "item_uid": uid, "correct": int(b < 0),
                     "option_scores": json.dumps([2.0, 0.5, 0.0, -0.5])})
        rows.append({"model": "noise", "task": "trog", "item_uid": uid, "correct": int(rng.random() < 0.5),
                     "option_scores": json.dumps(rng.normal(0, 1, 4).tolist())})
    pd.DataFrame(rows + (extra or [])).to_csv(path, index=False)
    return path


def compare(tmp: Path, trials: pd.DataFrame | Path, recs: Path, name: str = "out", items: Path | None | str = "auto",
            irt: Path | None = None, **settings: object) -> tuple[Path, dict]:
    """run_compare on the trog record (or `irt`) with small bootstraps; returns (output folder, summary).

    `items="auto"` writes the fixture's canonical options (the unshuffled trials' order) as `--items`.
    """
    if items == "auto":
        items = write_items(canonical(trog_trials()), tmp / f"{name}_items.csv")
    if isinstance(trials, pd.DataFrame):
        path = tmp / f"{name}_trials.csv"
        trials.to_csv(path, index=False)
        trials = path
    out = tmp / name
    summary = run_compare([(None, irt or irt_fixture_dir() / "trog_rasch_f1_scalar.rds")], trials,
                          irt_fixture_dir() / "runs.csv", recs, out,
                          Settings(**{"n_boot": 50, "n_perm": 200, "plots": False, **settings}), items_path=items)
    return out, summary


def compared(summary: dict, task: str = "trog") -> dict:
    """The one comparison of `task` in a summary (one children's language: the fixture records none, so its
    children are pooled under "not recorded")."""
    [found] = summary["tasks"][task]["languages"].values()
    return found


def exclusions(summary: dict, model: str = "") -> dict[str, int]:
    """Counted exclusions of the trog task (task level, or one model's)."""
    return {e["reason"]: e["count"] for e in summary["exclusions"] if e["task"] == "trog" and e["model"] == model}


def record_slots(name: str) -> dict[str, object]:
    """The slots of a fixture ModelRecord as plain Python values, ready for rdata.write_rds (a list in R)."""
    import rdata

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        obj = rdata.read_rds(irt_fixture_dir() / name)
    slots = {k: v for k, v in vars(obj).items()
             if k in ("model_vals", "scores", "data", "items", "runs", "groups", "group_names")}
    slots["data"] = np.asarray(slots["data"], dtype=float)
    for key in ("model_vals", "scores"):
        frame = slots[key].reset_index(drop=True)
        for column in frame.columns:
            if not (pd.api.types.is_numeric_dtype(frame[column]) or pd.api.types.is_bool_dtype(frame[column])):
                frame[column] = frame[column].astype(object)
        slots[key] = frame
    return slots


REPLICATE_Q = ([0.5, 0.25, 0.125, 0.125], [0.25] * 4, [0.125, 0.125, 0.25, 0.5], [0.625, 0.125, 0.125, 0.125],
               [0.1, 0.4, 0.4, 0.1])


def replicate_q(uid_rank: int) -> list[float]:
    """The known answer distribution of the `uid_rank`-th trog item (sorted uids) in `replicate_samples`."""
    return REPLICATE_Q[uid_rank % len(REPLICATE_Q)]


def replicate_samples(root: Path, seeds: int = 8, model: str = "org/chat", scores: bool = False,
                      output_type: str = "generate_until") -> Path:
    """lmms-eval samples of a model asked every trog item under option-order seeds 0 .. seeds - 1 (a run folder
    per seed, as the matrix writes them): each answer drawn from the item's `replicate_q` (seeded: the same files
    every time), presented order rotation seed % 4. `scores`: the records also carry option scores (a white-box
    model): ln q plus a per-seed shift."""
    uids = sorted(canonical(trog_trials()))
    rng = np.random.default_rng(0)
    answers = [rng.choice(4, seeds, p=replicate_q(rank)) for rank in range(len(uids))]
    for seed in range(seeds):
        run = root / f"seed{seed}"
        run.mkdir(parents=True)
        (run / "20260101_000000_results.json").write_text(json.dumps({"model_name": model}))
        lines = []
        for rank, uid in enumerate(uids):
            order = [(seed + p) % 4 for p in range(4)]
            choice = int(answers[rank][seed])
            record = {"output_type": output_type, "item_uid": uid, "task": "trog", "trial_type": "", "seed": seed,
                      "variant": "original", "presented_order": order, "choice_letter": "ABCD"[order.index(choice)],
                      "choice_index": choice, "correct": int(choice == 0),
                      "option_scores": [float(np.log(v)) + 0.1 * seed for v in replicate_q(rank)] if scores
                      else None}
            lines.append(json.dumps({"doc_id": rank, "levante_item": record}))
        task = "levante_trog" + ("_mc" if output_type == "multiple_choice" else "") + (f"_seed{seed}" if seed else "")
        (run / f"20260101_000000_samples_{task}.jsonl").write_text("\n".join(lines) + "\n")
    return root
