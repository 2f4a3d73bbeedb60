"""The L0 part of a summary: per lmms-eval run, accuracy by trace-length bin (single attempt, majority@k, pass@k),
how many programs each bin scored and dropped, and the paper row (bins 1, 3, 5, 7) naming the bins it lacks.

An L0 task is a leaf whose config has `metadata.l0.bin` (levante_tasks/tasks/l0_trace/). A bin whose number rests
on too few programs is marked (`levante_tasks.l0.aggregate.too_few` says when and why); a paper row that is NaN says
which of its bins have no scored program instead of showing a bare NaN, and one from data of another profile or
another prompt variant says it is not comparable with L0-Bench's table. A NaN metric reads n/a (null in
matrix.json); results written before the program counts existed show no counts ("-").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from levante_tasks.atomic import atomic_path
from levante_tasks.markdown_table import markdown_table

PAPER_GROUP = "l0_trace_paper"
PAPER_BINS = (1, 3, 5, 7)  # the splits of L0-Bench's published table (levante_tasks/tasks/l0_trace/l0_trace_paper.yaml)
VOTERS = (5, 15, 31)
METRICS = (("acc", "l0_trace_acc"), ("steps", "l0_steps"),
           *((f"maj@{k}", f"l0_maj_at_{k}_acc") for k in VOTERS), *((f"pass@{k}", f"l0_pass_at_{k}") for k in VOTERS))
PLOTTED = ("acc", *(f"maj@{k}" for k in VOTERS), *(f"pass@{k}" for k in VOTERS))


def _key() -> str:
    """The key above the L0 tables. The thresholds come from levante_tasks.l0.aggregate, imported here and in
    bin_rows only for a run with L0 tasks: a summary without one does not load the L0 package (~0.08 s of CPU)."""
    from levante_tasks.l0.aggregate import MIN_SCORED_PROGRAMS, MIN_SCORED_SHARE

    return (f"Accuracy by trace-length bin: acc = whole-trace accuracy of single attempts, steps = steps to the first "
            f"error, maj@k = majority vote of k voters, pass@k = unbiased pass@k; * = a split of L0-Bench's published "
            f"table (bins {', '.join(map(str, PAPER_BINS))}); programs = scored / in the bin (profile upstream drops "
            f"a program when any voter's answer is empty); ! = the number rests on too few programs (fewer than "
            f"{MIN_SCORED_PROGRAMS} scored, where a 95% interval can be wider than +-0.18, or more than "
            f"{1 - MIN_SCORED_SHARE:.0%} dropped, which leaves an easier selection of the bin).")


def _number(value: Any) -> float | None:
    """A metric value as a float; None when absent, NaN (no program to average over) or not a number ("N/A")."""
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    return float(value)


def _row_values(row: Mapping[str, Any]) -> dict[str, float | None]:
    return {label: _number(row.get(f"{metric},none")) for label, metric in METRICS}


def bin_rows(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per L0 bin task of a results file, by bin: its metrics, program counts and the too-few mark."""
    rows = []
    for task, config in (results.get("configs") or {}).items():
        l0 = ((config or {}).get("metadata") or {}).get("l0") if isinstance(config, Mapping) else None
        row = (results.get("results") or {}).get(task)
        if not isinstance(l0, Mapping) or not isinstance(l0.get("bin"), int) or not isinstance(row, Mapping):
            continue
        from levante_tasks.l0.aggregate import too_few  # an L0 task: see _key

        programs, dropped = _number(row.get("l0_programs,none")), _number(row.get("l0_programs_dropped,none"))
        counted = programs is not None and dropped is not None
        scored = int(programs - dropped) if counted else None
        rows.append({"task": task, "bin": l0["bin"], "profile": l0.get("profile", "default"),
                     "prompt": l0.get("prompt", "default"), "comparable": l0.get("comparable_with_paper"),
                     "programs": int(programs) if counted else None, "scored": scored,
                     "too_few": counted and too_few(int(programs), scored), **_row_values(row)})
    return sorted(rows, key=lambda r: r["bin"])


def paper_row(results: Mapping[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The paper group's row with the paper bins that have no scored program (`empty`) or too few (`few`), and
    whether any of its bins' tasks recorded that it is not comparable with L0-Bench's table (`incomparable`)."""
    group = (results.get("groups") or {}).get(PAPER_GROUP) or (results.get("results") or {}).get(PAPER_GROUP)
    if not isinstance(group, Mapping):
        return None
    by_bin = {r["bin"]: r for r in rows}
    empty = [b for b in PAPER_BINS if b not in by_bin or by_bin[b]["scored"] == 0]
    few = [b for b in PAPER_BINS if b not in empty and by_bin[b]["too_few"]]
    incomparable = any(by_bin[b]["comparable"] is False for b in PAPER_BINS if b in by_bin)
    return {"task": PAPER_GROUP, "empty": empty, "few": few, "incomparable": incomparable, **_row_values(group)}


def run_section(label: str, model: str, results: Mapping[str, Any]) -> dict[str, Any] | None:
    """The L0 bins of one run (None when it has no L0 task): what summary.md and l0_bins.png show."""
    rows = bin_rows(results)
    if not rows:
        return None
    return {"source": label, "model": model, "bins": rows, "paper": paper_row(results, rows)}


def _cell(value: float | None, steps: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:.1f}" if steps else f"{value:.3f}"


def _bin_note(row: Mapping[str, Any]) -> str:
    if row["scored"] == 0:
        return f"no program scored ({row['programs']} dropped): metrics NaN"
    if row["too_few"]:
        return f"! rests on {row['scored']} of {row['programs']} programs"
    return ""


def _paper_note(paper: Mapping[str, Any]) -> str:
    notes = []
    if paper["incomparable"]:
        notes.append("not comparable with L0-Bench's table (needs profile upstream and prompt default)")
    if paper["empty"]:
        notes.append(f"n/a: bin{'s' if len(paper['empty']) > 1 else ''} {', '.join(map(str, paper['empty']))} "
                     f"{'have' if len(paper['empty']) > 1 else 'has'} no scored program")
    if paper["few"]:
        notes.append(f"! bins {', '.join(map(str, paper['few']))} rest on too few programs")
    return "; ".join(notes)


def markdown(sections: list[dict[str, Any]], plot: bool) -> list[str]:
    """summary.md's L0 section: the key, the plot, and one table per run (bins, then the paper row)."""
    if not sections:
        return []
    lines = ["## L0-Bench by trace-length bin", "", _key(), ""]
    if plot:
        lines += ["![L0 accuracy by bin](l0_bins.png)", ""]
    header = ["bin", "programs", *(label for label, _ in METRICS), "note"]
    for section in sections:
        table = []
        for row in section["bins"]:
            counts = "-" if row["programs"] is None else f"{row['scored']}/{row['programs']}"
            table.append([f"{row['bin']}{'*' if row['bin'] in PAPER_BINS else ''}", counts,
                          *(_cell(row[label], label == "steps") for label, _ in METRICS), _bin_note(row)])
        paper = section["paper"]
        if paper is not None:
            table.append([f"paper ({', '.join(map(str, PAPER_BINS))})", "",
                          *(_cell(paper[label], label == "steps") for label, _ in METRICS), _paper_note(paper)])
        first = section["bins"][0]
        lines += [f"### {section['model']}: {section['source']} (profile {first['profile']}, prompt {first['prompt']})",
                  "",
                  markdown_table(header, table), ""]
    return lines


def write_plot(path: Path, sections: list[dict[str, Any]]) -> None:
    """l0_bins.png: per run, accuracy by bin (single attempt, majority@k, pass@k), the paper's bins shaded."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 0.6 + 3.2 * len(sections)), dpi=100)
    for index, section in enumerate(sections, start=1):
        axes = fig.add_subplot(len(sections), 1, index)
        bins = [r["bin"] for r in section["bins"]]
        for number in PAPER_BINS:
            axes.axvspan(number - 0.4, number + 0.4, color="#eeeeee", zorder=0)
        for label in PLOTTED:
            if any(r[label] is not None for r in section["bins"]):
                axes.plot(bins, [math.nan if r[label] is None else r[label] for r in section["bins"]], marker="o",
                          label=label)
        for row in section["bins"]:
            if row["scored"] == 0 or row["too_few"]:
                axes.annotate("empty" if row["scored"] == 0 else "!", (row["bin"], 0.02), ha="center")
        axes.set_xticks(bins, [f"{b}*" if b in PAPER_BINS else str(b) for b in bins])
        axes.set_ylim(0, 1.05)
        axes.set_xlabel("trace-length bin (* = paper split, shaded)")
        axes.set_ylabel("accuracy")
        axes.set_title(f"{section['model']}: {section['source']}", fontsize=8)
        axes.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    FigureCanvasAgg(fig)
    with atomic_path(path) as temporary:
        fig.savefig(temporary, format="png", metadata={"Software": None})
