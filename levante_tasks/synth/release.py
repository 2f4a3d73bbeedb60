"""Write a synthetic LEVANTE release (real layout) plus simulated children and IRT truth, deterministically.

Layout under `out_dir`: `<version>/{manifest.csv, SYNTHETIC.md, translations/item-bank-translations.csv,
corpus/theory-of-mind/..., visual/<task>/...}`, `children/{trials.csv, runs.csv}`, `irt/{item_params.csv, groups.csv,
registry/<task_id>/...}` (the IRT records, synth/records.py). Everything is built in a staging folder
next to the targets and renamed into place, so readers never see half a release; a folder is replaced only if
it is itself synthetic (holds SYNTHETIC.md). The staging folder's name carries the writer's pid, so a killed
run's leftovers are removed by the next run; file-system errors (read-only, disk full) are one line.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from levante_tasks import __version__
from levante_tasks.atomic import clean_stale, make_staging_dir, name_target, swap_dir, write_text
from levante_tasks.errors import LevanteError, display_path, os_error
from levante_tasks.markdown_table import markdown_table
from levante_tasks.schema import layout
from levante_tasks.schema.markers import SYNTHETIC_RELEASE_MARKER
from levante_tasks.schema.tasks import TASKS, task_info
from levante_tasks.synth import children as kids
from levante_tasks.synth import draw
from levante_tasks.synth import records as irt
from levante_tasks.synth import translations as tr
from levante_tasks.synth.items import MANIFEST_COLUMNS, TaskItems, stream
from levante_tasks.synth.populations import draw_children
from levante_tasks.synth.registry import synth_task
from levante_tasks.tasks.theory_of_mind import synth as tom  # the corpus columns and source label

GENERATOR_VERSION = "2"
MARKER = SYNTHETIC_RELEASE_MARKER
# The Redivis trials layout of the irt-fixture, plus `language` as LEVANTE's newer per-site exports carry it.
TRIAL_COLUMNS = ("site", "dataset", "task_id", "user_id", "run_id", "trial_id", "trial_number", "item_uid",
                 "item_task", "item_group", "item", "correct", "rt", "response", "answer", "distractors", "chance",
                 "theta_estimate", "theta_se", "language")
RUN_COLUMNS = ("run_id", "user_id", "site", "age", "true_theta", "task", "dataset", "language")
PARAM_COLUMNS = ("task", "item_uid", "a1", "d", "g", "b", "dataset")
GROUP_COLUMNS = ("task", "record", "group", "dataset", "language", "mean", "var", "age_slope")


def build_tasks(seed: int) -> list[TaskItems]:
    """Every catalogue task's rows and images, in manifest order (alphabetical internal name), each from its own
    stream; builders are looked up by catalogue row (synth/registry.py), so a task without one is an error."""
    return [synth_task(info).build(stream(seed, info.name)) for info in sorted(TASKS, key=lambda info: info.name)]


def minimal_csv(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """CSV text as in the release bucket: quotes only where needed, `\\n` line ends."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _r_value(value: Any) -> str:
    if value is None:
        return "NA"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format(value, ".15g")
    return '"' + str(value).replace('"', '""') + '"'


def r_csv(header: Sequence[str], records: Iterable[dict[str, Any]]) -> str:
    """CSV text as R's write.csv writes it (the Redivis export style): strings quoted, numbers/TRUE/NA bare."""
    lines = [",".join(_r_value(name) for name in header)]
    lines += [",".join(_r_value(record[name]) for name in header) for record in records]
    return "\n".join(lines) + "\n"


def translation_rows(tasks: list[TaskItems]) -> list[tr.TranslationRow]:
    """Every task's rows of the translation table, tasks in manifest order (a repeated item_id is an error)."""
    rows = [row for task in tasks for row in (synth_task(task_info(task.task)).translate or (lambda _: []))(task)]
    seen: set[str] = set()
    for row in rows:
        if row.item_id in seen:
            raise AssertionError(f"translation item_id {row.item_id} twice")
        seen.add(row.item_id)
    return rows


def _check(tasks: list[TaskItems]) -> None:
    """Internal consistency: unique uids per task and an image for every referenced stem."""
    for task in tasks:
        uids = [item.item_uid for item in task.items]
        if len(uids) != len(set(uids)):
            raise AssertionError(f"{task.task}: duplicate item_uid")
        for item in task.items:
            image_options = "<image1>" in (item.full_prompt or "") or (
                item.full_prompt is None and task_info(item.task).image_options)
            refs = [item.prompt_image] + ([item.answer, *(item.alternatives or ())] if image_options else [])
            missing = [ref for ref in refs if ref is not None and ref not in task.images]
            if missing:
                raise AssertionError(f"{task.task}/{item.item_uid}: no image for {missing}")


def _synthetic_md(seed: int, version: str, n_children: int, tasks: list[TaskItems]) -> str:
    counts = markdown_table(["task", "manifest rows", "scored items", "images"],
                            [[t.task, len(t.items), sum(map(kids.scored, t.items)), len(t.images)] for t in tasks])
    return f"""# SYNTHETIC LEVANTE release (not LEVANTE data)

Generated by `levante-tasks synth` (levante-tasks {__version__}, generator version {GENERATOR_VERSION}),
seed {seed}, version folder `{version}`, {n_children} simulated children. Same seed and generator version give
byte-identical files.

Every item, story and picture here was made up by the generator: coloured shapes, relational sentences about
shapes, arithmetic, dot cards, number lines, pattern matrices, rotated silhouettes and short stories. The layout,
column names, `NA` convention and prompt templates copy the real LEVANTE asset bucket so the same code reads both.

How it is labelled: this file; every PNG carries a tEXt `Comment` = "{draw.SYNTHETIC_TAG}" and every WEBP an
EXIF ImageDescription with the same text; the corpus `source` column is `{tom.SOURCE}`; the children's sites,
datasets and users are named `synth_*` and `item_params.csv` has `dataset` = `synthetic`; manifest.csv keeps
exactly the 12 real columns (a validator rejects extra ones), so it is labelled by this file beside it.

{counts}

`{layout.TRANSLATIONS_FILE}`: LEVANTE's translation-table layout (columns {", ".join(tr.COLUMNS)}), made-up German
and Spanish (Colombia) text; cells left untranslated on purpose: {", ".join(f"{i} {loc}" for i, loc in tr.GAPS)}.

Children and IRT truth (`../children/`, `../irt/`):

{kids.__doc__}"""


def _write_release(root: Path, version: str, tasks: list[TaskItems], seed: int, n_children: int) -> None:
    base = root / version
    rows = [item.manifest_row() for task in tasks for item in task.items]
    write_text(base / layout.MANIFEST_FILE, minimal_csv(MANIFEST_COLUMNS, rows))
    write_text(base / MARKER, _synthetic_md(seed, version, n_children, tasks))
    table = minimal_csv(tr.COLUMNS, (row.csv_row() for row in translation_rows(tasks)))
    write_text(base / layout.TRANSLATIONS_FILE, table)
    for task in tasks:
        if task.corpus:
            write_text(base / layout.CORPUS_DIR / task.task / f"{task.task}-item-bank.csv",
                       minimal_csv(tom.CORPUS_COLUMNS, task.corpus))
        folder = base / layout.VISUAL_DIR / task.task
        folder.mkdir(parents=True, exist_ok=True)
        save = draw.save_webp if task.ext == "webp" else draw.save_png
        for stem in sorted(task.images):
            save(task.images[stem], folder / f"{stem}.{task.ext}")


def _write_children(root: Path, tasks: list[TaskItems], seed: int, n_children: int) -> tuple[int, int]:
    drawn = {t.task: irt.task_truth(t, seed) for t in tasks}
    truths = {task: truth for task, (truth, _) in drawn.items()}
    plans = {task: plan for task, (_, plan) in drawn.items()}
    children = draw_children(n_children, stream(seed, "children"))
    runs, trials = kids.simulate(children, plans, stream(seed, "responses"))
    write_text(root / "children" / "trials.csv", r_csv(TRIAL_COLUMNS, trials))
    write_text(root / "children" / "runs.csv", r_csv(RUN_COLUMNS, runs))
    params = [{"task": t.task, "item_uid": t.item_uid, "a1": t.a1, "d": t.d, "g": t.g, "b": round(t.b, 4),
               "dataset": "synthetic"} for task in sorted(truths) for t in truths[task]]
    write_text(root / "irt" / "item_params.csv", r_csv(PARAM_COLUMNS, params))
    groups = [row for task in sorted(plans) for row in irt.group_table(task, plans[task])]
    write_text(root / "irt" / "groups.csv", r_csv(GROUP_COLUMNS, groups))
    for task in sorted(plans):
        for path, record in irt.records(task, truths[task], plans[task]).items():
            write_text(root / "irt" / path, r_csv(irt.COLUMNS, record))
    note = f"Synthetic (levante-tasks synth, seed {seed}); see the release's {MARKER} for the generator.\n"
    write_text(root / "children" / MARKER, note)
    write_text(root / "irt" / MARKER, note)
    return len(runs), len(trials)


def _swap_in(staging: Path, out_dir: Path, names: Sequence[str]) -> None:
    """Replace out_dir/<name> by staging/<name>, refusing to touch a folder that is not a synthetic one."""
    for name in names:
        target = out_dir / name
        if target.exists() and not (target / MARKER).is_file():
            raise LevanteError(f"{display_path(target)}: exists and is not a synthetic release folder (no {MARKER}); "
                               "not replaced")
    for name in names:
        swap_dir(staging / name, out_dir / name)


def write_synthetic_release(out_dir: Path, seed: int, version: str = "synthetic", n_children: int = 300) -> dict:
    """Write the synthetic release, children and IRT truth under `out_dir`; return a summary (counts, files)."""
    if not version or version in {".", "..", "children", "irt"} or "/" in version or "\\" in version:
        raise LevanteError(f"{version!r}: not a usable version folder name")
    if seed < 0:
        raise LevanteError(f"seed {seed}: must be >= 0")
    if n_children < 1:
        raise LevanteError(f"children {n_children}: must be >= 1")
    out_dir = Path(out_dir)
    tasks = build_tasks(seed)
    _check(tasks)
    try:
        clean_stale(out_dir)
        staging = make_staging_dir(out_dir / version)
        try:
            _write_release(staging, version, tasks, seed, n_children)
            n_runs, n_trials = _write_children(staging, tasks, seed, n_children)
            names = (version, "children", "irt")
            files = sorted(p.relative_to(staging).as_posix() for name in names
                           for p in (staging / name).rglob("*") if p.is_file())
            _swap_in(staging, out_dir, names)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    except OSError as exc:
        name_target(exc, out_dir)  # e.g. ENOSPC from an image encoder names no file
        raise os_error(exc, "writing the synthetic release") from None
    return {
        "version": version, "seed": seed, "generator_version": GENERATOR_VERSION, "n_children": n_children,
        "items_per_task": {t.task: len(t.items) for t in tasks},
        "scored_items_per_task": {t.task: sum(kids.scored(i) for i in t.items) for t in tasks},
        "n_runs": n_runs, "n_trials": n_trials, "files": files,
    }
