"""Turn a release (manifest + corpus + visuals) into scored item rows (docs/design.md §3), one list per task.

Every manifest row ends up as an item, an exclusion by design (counted with its reason), or a validation
problem (fatal in strict mode; the row is dropped and counted in lenient mode).

What differs between tasks is looked up by catalogue row in `ITEM_RULES`, gathered from each task folder's
`items.py` (`levante_tasks/tasks/<folder>/items.py`; a task with no special handling has `ItemRules()`); the
option kind comes from the row's `image_options`. The builder holds the few steps that need release-wide context
(stories from the theory-of-mind corpus, a context sentence, number lines); hooks on the rules
(`levante_tasks.data.rules.ItemRules`) say which rows of which task take them, so no step names a task.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from levante_tasks.core import prompts
from levante_tasks.data import numberline, tom
from levante_tasks.data.decoding import Verdict, decode_all, verdict
from levante_tasks.data.manifest import ManifestRow, load_manifest
from levante_tasks.data.problems import Problem, ProblemLog
from levante_tasks.data.rules import ItemRules
from levante_tasks.data.visuals import VisualIndex
from levante_tasks.errors import LevanteError, problem_text
from levante_tasks.schema import layout
from levante_tasks.schema.items import LETTERS, ItemRow, slider_chance
from levante_tasks.schema.tasks import TASKS, TaskInfo, entry_for, task_info
from levante_tasks.tasks import piece_file, pieces

_CANNOT_OPEN = "cannot be opened"  # cached for an image file that raised OSError (already a file-level problem)


@dataclass(frozen=True)
class ItemSource:
    """What one item was made of, for steps after the build (data.localize): its manifest row, its theory-of-mind
    corpus question (tasks with `stories`) and the context sentence its question starts with (`context_for`)."""

    row: ManifestRow
    story: tom.TomQuestion | None = None
    context: str = ""


@dataclass
class ReleaseItems:
    """Items per task plus everything needed to account for the rows that did not become items."""

    items: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    sources: dict[int, ItemSource] = field(default_factory=dict)  # manifest row number -> what its item came from
    excluded: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    generated: dict[str, tuple[float, float, float | None]] = field(default_factory=dict)
    exact_duplicates: int = 0
    rows_by_task: Counter = field(default_factory=Counter)  # manifest rows per task (exact duplicates once)
    picture_sha256: dict[str, str] = field(default_factory=dict)  # each decoded picture's hash, from the bytes decoded


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _parse_range(text: str) -> tuple[float, float] | None:
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2:
        return None
    low, high = _float(parts[0]), _float(parts[1])
    if low is None or high is None or high <= low or not math.isfinite(high - low):
        return None
    return low, high


RULES_MODULE = "items"  # levante_tasks/tasks/<folder>/items.py defines RULES
ITEM_RULES: dict[str, ItemRules] = pieces(RULES_MODULE, "RULES")  # task name -> its item rules


def item_rules(info: TaskInfo) -> ItemRules:
    """The item rules of a catalogue row (a clear error naming its folder's `items.py` when it has none)."""
    return entry_for(ITEM_RULES, info, "item rules", piece_file(info.folder, RULES_MODULE))


def option_kind(row: ManifestRow) -> str:
    """`image` for picture options (and rows the task's rules say are pictures: non-symbolic math cards), else
    `text`."""
    info = task_info(row.task)
    return "image" if info.image_options or item_rules(info).picture_row(row) else "text"


def option_problem(options: list[str]) -> tuple[str, str] | None:
    """(problem kind, message) when a choice row's options cannot make an item, else None."""
    if not options:
        return "no_answer", "no answer key"
    if options[0] in options[1:]:
        return "answer_among_distractors", f"answer {options[0]!r} also listed as a distractor"
    if len(set(options)) != len(options):
        return "duplicate_option", f"repeated distractor in {options}"
    if len(options) < 2:
        return "too_few_options", "fewer than two options"
    if len(options) > len(LETTERS):
        return "too_many_options", f"{len(options)} options, more than the letters {LETTERS}"
    return None


def _number_line(row: ManifestRow, marked: str) -> tuple[float, float, float] | None:
    """(low, high, marked value) of a number-line row, or None when its range or marked value is unusable."""
    span, target = _parse_range(row.get("item")), _float(marked)
    if span is None or target is None or not span[0] <= target <= span[1]:
        return None
    return span[0], span[1], target


def _is_slider(row: ManifestRow) -> bool:
    """A number-line slider row (the task's rules say so: egma-math's): answered with a number, not a choice."""
    return item_rules(task_info(row.task)).slider(row)


def _manifest_problem(row: ManifestRow) -> str | None:
    """The problem kind of a row that the manifest alone shows (options, a number-line range), else None."""
    if _is_slider(row):
        return None if _number_line(row, row.get("answer")) else "bad_slider"
    wrong = option_problem(row.options())
    if wrong:
        return wrong[0]
    if row.get("trial_type") == "Number Line 4afc" and _number_line(row, row.options()[0]) is None:
        return "bad_number_line"
    return None


def _base_item(row: ManifestRow) -> dict[str, Any]:
    return ItemRow(item_uid=row.item_uid, source_item_uid=row.item_uid, task=row.task,
                   task_id=task_info(row.task).task_id, trial_type=row.get("trial_type"), prompt=row.get("prompt"),
                   prompt_phrase=row.get("prompt_phrase"), manifest_row=row.row).as_dict()


def shown_pictures(visuals: VisualIndex, rows: list[ManifestRow]) -> list[str]:
    """Every picture the rows may show (an option's, a prompt's), once each, in the order the rows name them: the
    pictures a build decodes."""
    shown: dict[str, None] = {}
    for row in rows:
        for key in (*row.options(), row.get("prompt_image")):
            rel = visuals.find(row.task, key) if key else None
            if rel:
                shown[rel] = None
    return list(shown)


class _Builder:
    """Holds the release-wide context (visual index, ToM pairing, problem log) while rows are converted."""

    def __init__(self, root: Path, rows: list[ManifestRow], log: ProblemLog, result: ReleaseItems, jobs: int,
                 decoded: dict[str, Verdict]) -> None:
        self.root, self.log, self.result = root, log, result
        self.visuals = VisualIndex(root)
        for folder, why in self.visuals.unreadable:
            log.add(Problem(folder, "unreadable_folder", f"folder not readable ({why})"))
        self.tom_pairs: dict[str, tom.TomQuestion] = {}
        tom_rows = [r for r in rows if item_rules(task_info(r.task)).stories]
        if tom_rows:
            self.tom_pairs = tom.align_with_manifest(tom.read_tom_corpus(root / tom.CORPUS_RELPATH), tom_rows)
        self.sds_context = ""
        self._image_problems: dict[str, str | None] = {}  # each distinct file is decoded once
        shown = shown_pictures(self.visuals, rows)  # decoded in advance, on `jobs` cores, unless decoded when copied
        known = {rel: decoded[key] for rel in shown if (key := rel.removeprefix(f"{layout.RELEASE_DIR}/")) in decoded}
        todo = [rel for rel in shown if rel not in known]
        self._decoded = {**known, **dict(zip(todo, decode_all([self.visuals.absolute(rel) for rel in todo], jobs),
                                             strict=True))}

    def problem(self, row: ManifestRow, kind: str, message: str) -> None:
        self.log.add(Problem(layout.MANIFEST_FILE, kind, f"{row.item_uid}: {message}", row=row.row,
                             item_uid=row.item_uid, task=row.task))

    def exclude(self, row: ManifestRow, reason: str) -> None:
        self.result.excluded[row.task][reason] += 1

    def image(self, row: ManifestRow, key: str, role: str) -> str | None:
        """Resolve an image key of this row's task; record missing/unreadable images as problems."""
        rel = self.visuals.find(row.task, key)
        if rel is None:
            self.problem(row, "image_missing", f"{role} image {key!r} not found in {layout.VISUAL_DIR}/{row.task}/")
            return None
        return rel if self.decodes(row, rel, role) else None

    def decodes(self, row: ManifestRow, rel: str, role: str) -> bool:
        """Whether the image file decodes fully; records an item problem (or a file problem) when not."""
        shown = rel.removeprefix(f"{layout.RELEASE_DIR}/")
        if rel not in self._image_problems:
            why, error, sha256 = self._verdict(rel)
            self._image_problems[rel] = why if error is None else _CANNOT_OPEN
            if sha256 is not None:
                self.result.picture_sha256[rel] = sha256
            if error is not None:  # the file cannot be opened: a file-level problem, fatal in every mode
                self.log.add(Problem(shown, "unreadable_file", problem_text(error)))
        why = self._image_problems[rel]
        if why is not None and why != _CANNOT_OPEN:
            self.problem(row, "image_unreadable", f"{role} image {shown} is unreadable ({why})")
        return why is None

    def _verdict(self, rel: str) -> Verdict:
        """The decode verdict of `rel`: taken in advance (every picture a row may show), else decoded now."""
        return self._decoded.pop(rel) if rel in self._decoded else verdict(self.visuals.absolute(rel))

    def convert(self, row: ManifestRow) -> dict[str, Any] | None:
        """One manifest row -> item dict, or None (excluded or problem, already recorded)."""
        task, trial_type = row.task, row.get("trial_type")
        rules = item_rules(task_info(task))
        if trial_type == rules.context_from:
            self.sds_context = row.get("item")
        reason = rules.exclude(row)
        if reason:
            return self.exclude(row, reason)
        if _is_slider(row):
            return self.slider(row)
        options = row.options()
        wrong = option_problem(options)
        if wrong:
            return self.problem(row, *wrong)
        item = _base_item(row)
        kind = option_kind(row)
        item.update(answer=options[0], options=options, option_kind=kind, n_options=len(options),
                    chance_level=1.0 / len(options))
        ok = True
        if kind == "image":
            images = [self.image(row, key, f"option {k + 1}") for k, key in enumerate(options)]
            ok = all(images)
            item["option_images"] = [i or "" for i in images]
        elif rules.stories:  # pictures are optional here: used only when every option has one
            found = [self.visuals.find(task, key) for key in options]
            if all(found):
                ok = all([self.decodes(row, rel, f"option {k + 1}") for k, rel in enumerate(found)])
                item["option_images"] = found
        prompt_image = row.get("prompt_image")
        if trial_type == "Number Line 4afc":
            line = _number_line(row, options[0])
            if line is None:
                return self.problem(row, "bad_number_line", f"range {row.get('item')!r} / answer {options[0]!r}")
            low, high, target = line
            item.update(range_min=low, range_max=high)
            item["stimulus_image"] = self.generated(low, high, target)
        elif prompt_image and prompt_image != "TODO":
            stimulus = self.image(row, prompt_image, "prompt")
            ok = ok and stimulus is not None
            item["stimulus_image"] = stimulus or ""
        if not ok:
            return None
        item["question"] = self.question(row, item)
        if rules.stories:
            question = self.tom_pairs.get(row.item_uid)
            if question is None:
                return self.problem(row, "tom_not_in_corpus", "no matching question in the theory-of-mind corpus")
            item["story"] = question.story
            item["question"] = f"{question.story} {question.question}".strip()
        return item

    def question(self, row: ManifestRow, item: dict[str, Any]) -> str:
        """The item's question (its answer clause is composed from the item's facts: core.prompts.compose)."""
        template = row.get("full_prompt")
        if template:
            stem = prompts.stem_from_template(template, row.get("prompt_phrase"))
        else:
            stem = row.get("item") or row.get("prompt")
            if row.get("trial_type") == item_rules(task_info(row.task)).context_for:
                stem = f"{self.sds_context} {stem}".strip()
        return prompts.with_context_placeholder(stem, bool(item["stimulus_image"]))

    def source(self, row: ManifestRow) -> ItemSource:
        """What the item of `row` (just converted) was made of."""
        rules = item_rules(task_info(row.task))
        return ItemSource(row, self.tom_pairs.get(row.item_uid) if rules.stories else None,
                          self.sds_context if row.get("trial_type") == rules.context_for else "")

    def generated(self, low: float, high: float, marked: float | None) -> str:
        rel = numberline.number_line_relpath(low, high, marked)
        self.result.generated[rel] = (low, high, marked)
        return rel

    def slider(self, row: ManifestRow) -> dict[str, Any] | None:
        line = _number_line(row, row.get("answer"))
        if line is None:
            return self.problem(row, "bad_slider", f"range {row.get('item')!r} / target {row.get('answer')!r}")
        item = _base_item(row)
        low, high, target = line
        item.update(answer=row.get("answer"), option_kind="slider", response_format="slider",
                    range_min=low, range_max=high, chance_level=slider_chance(target, low, high),
                    stimulus_image=self.generated(low, high, None))
        item["question"] = prompts.slider_question(low, high, row.get("answer"))
        return item


def _drop_conflicting_duplicates(rows: list[ManifestRow], log: ProblemLog) -> list[ManifestRow]:
    """Keep the first row of a uid; later rows with different content are `duplicate_item_uid` problems."""
    first: dict[tuple[str, str], ManifestRow] = {}
    kept: list[ManifestRow] = []
    for row in rows:
        key = (row.task, row.item_uid)
        if task_info(row.task).repeated_uids or key not in first:
            first.setdefault(key, row)
            kept.append(row)
            continue
        differing = [c for c, v in row.values.items() if first[key].values.get(c) != v]
        log.add(Problem(layout.MANIFEST_FILE, "duplicate_item_uid",
                        f"{row.item_uid}: duplicate item_uid (first at row {first[key].row}; differs in "
                        f"{', '.join(differing)})", row=row.row, item_uid=row.item_uid,
                        task=row.task))
    return kept


def _number_repeated_uids(items: list[dict[str, Any]]) -> None:
    """Give trials that share a uid by design (same-different-selection) unique uids `<uid>__<k>`."""
    counts = Counter(item["source_item_uid"] for item in items)
    seen: Counter = Counter()
    for item in items:
        uid = item["source_item_uid"]
        if counts[uid] > 1:
            seen[uid] += 1
            item["item_uid"] = f"{uid}__{seen[uid]}"


def read_release_items(release_root: Path, log: ProblemLog, jobs: int = 1,
                       decoded: dict[str, Verdict] | None = None) -> ReleaseItems:
    """Read a release folder into items per task; problems go to `log` (rows with problems yield no item).

    The pictures the rows may show are decoded first, on up to `jobs` processes (data.decoding), but for those
    `decoded` already holds (release relpath -> verdict); the items and the problems are the same for every `jobs`."""
    result = ReleaseItems()
    manifest = load_manifest(release_root / layout.MANIFEST_FILE, log)
    result.exact_duplicates, result.rows_by_task = manifest.exact_duplicates, manifest.rows_by_task
    rows = _drop_conflicting_duplicates(manifest.rows, log)
    builder = _Builder(release_root, rows, log, result, jobs, decoded or {})
    for row in rows:
        item = builder.convert(row)
        if item is not None:
            result.items[row.task].append(item)
            result.sources[row.row] = builder.source(row)
    for info in TASKS:
        if info.repeated_uids and info.name in result.items:
            _number_repeated_uids(result.items[info.name])
    return result


def count_manifest_items(manifest_path: Path) -> dict[str, Any]:
    """Item counts of a manifest as `prepare` makes them, without images: per task the manifest rows (exact
    duplicates once), rows dropped as conflicting duplicates, rows excluded by design (per reason), and the items
    left, in all and per trial type (and per reported sub-type for a task with sub-types).

    Rows with a problem the manifest alone shows (options, number-line ranges) are counted per kind and left out,
    as lenient prepare drops them. Image and corpus problems are not checked (they depend on the other release
    files), so `items` is what lenient prepare builds from a release whose pictures and stories are complete.
    The result names the manifest by its version folder and sha256, never by path (it is committed:
    each task folder's `levante_tasks/tasks/<folder>/item_counts.json`).
    """
    log = ProblemLog()
    manifest = load_manifest(manifest_path, log)
    if log.file_problems():  # a manifest that cannot be read (columns, encoding): nothing to count
        raise LevanteError("\n".join(str(problem) for problem in log.file_problems()))
    kept = _drop_conflicting_duplicates(manifest.rows, log)
    tasks: dict[str, dict[str, Any]] = {}
    for info in TASKS:
        if info.name not in manifest.rows_by_task:
            continue
        rows = [row for row in kept if row.task == info.name]
        excluded: Counter = Counter()
        problems: Counter = Counter()
        items: list[ManifestRow] = []
        for row in rows:
            reason = item_rules(info).exclude(row)
            problem = None if reason else _manifest_problem(row)
            if reason:
                excluded[reason] += 1
            elif problem:
                problems[problem] += 1
            else:
                items.append(row)
        entry: dict[str, Any] = {
            "manifest_rows": manifest.rows_by_task[info.name],
            "dropped_duplicates": manifest.rows_by_task[info.name] - len(rows),
            "excluded": dict(sorted(excluded.items())),
            "problems": dict(sorted(problems.items())),
            "items": len(items),
            "trial_types": dict(sorted(Counter(row.get("trial_type") for row in items).items())),
        }
        if info.subtypes:
            by_subtype = Counter(info.subtype_of(row.get("trial_type")) for row in items)
            entry["subtypes"] = {name: by_subtype[name] for name, _ in info.subtypes}
        tasks[info.name] = entry
    digest = hashlib.sha256(Path(manifest_path).read_bytes()).hexdigest()
    return {"manifest": {"version": Path(manifest_path).resolve().parent.name, "sha256": digest}, "tasks": tasks}
