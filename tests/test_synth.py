"""Synthetic release generator: determinism, real layout, images, ToM alignment, children, labelling, CLI."""

from __future__ import annotations

import csv
import hashlib
import os
import re
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from levante_tasks.cli import main
from levante_tasks.schema.crosswalk import canonical_uid
from levante_tasks.schema.tasks import TASKS
from levante_tasks.synth import write_synthetic_release

TAG = "levante-tasks synthetic"
MARKER_NAME = "SYNTHETIC.md"
REAL_MANIFEST_COLUMNS = [
    "task", "task_id", "item_uid", "trial_type", "prompt", "item", "answer", "response_alternatives",
    "chance_level", "prompt_phrase", "prompt_image", "full_prompt",
]
REAL_CORPUS_COLUMNS = [
    "source", "block_index", "task", "trial_type", "assessment_stage", "audio_file", "prompt", "item",
    "orig_item_num", "answer", "response_alternatives", "chance_level", "item_id",
]
TASK_IDS = {info.name: info.task_id for info in TASKS}  # every catalogue task is in the synthetic release
REAL_TRIAL_HEADER = ('"site","dataset","task_id","user_id","run_id","trial_id","trial_number","item_uid",'
                     '"item_task","item_group","item","correct","rt","response","answer","distractors","chance",'
                     '"theta_estimate","theta_se"')
TRIAL_HEADER = REAL_TRIAL_HEADER + ',"language"'  # as LEVANTE's newer per-site exports add it


def shared_dir() -> Path | None:
    """The shared sample data folder, if this checkout has one."""
    env = os.environ.get("LEVANTE_SHARED")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / "shared"
    return path if (path / "levante-sample").is_dir() else None


def tree_hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, float]:
    out = tmp_path_factory.mktemp("synth")
    start = time.perf_counter()
    summary = write_synthetic_release(out, seed=11)
    return out, summary, time.perf_counter() - start


@pytest.fixture(scope="module")
def manifest(release: tuple[Path, dict, float]) -> list[dict[str, str]]:
    with open(release[0] / "synthetic" / "manifest.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def image_option_rows(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Rows whose options are pictures: `<imageK>` placeholders, or no template outside math (sds)."""
    return [r for r in rows if r["answer"] != "NA" and ("<image1>" in r["full_prompt"] or (
        r["full_prompt"] == "NA" and r["task"] != "egma-math"))]


def test_same_seed_same_bytes_and_other_seed_differs(release: tuple[Path, dict, float], tmp_path: Path) -> None:
    out, summary, _ = release
    write_synthetic_release(tmp_path / "again", seed=11)
    write_synthetic_release(tmp_path / "other", seed=12)
    first, again, other = tree_hashes(out), tree_hashes(tmp_path / "again"), tree_hashes(tmp_path / "other")
    assert first == again
    assert sorted(first) == summary["files"]
    for name in ("synthetic/manifest.csv", "children/trials.csv", "irt/item_params.csv"):
        assert first[name] != other[name], name


def test_summary_and_speed(release: tuple[Path, dict, float]) -> None:
    _, summary, seconds = release
    assert set(summary["items_per_task"]) == set(TASK_IDS)
    assert all(12 <= n <= 30 for n in summary["items_per_task"].values()), summary["items_per_task"]
    assert summary["n_trials"] > 5000 and summary["n_runs"] > 500
    assert seconds < 30  # budget 10 s on one free core; slack for a shared CI machine


def test_manifest_has_the_real_columns_and_conventions(release: tuple[Path, dict, float],
                                                       manifest: list[dict[str, str]]) -> None:
    text = (release[0] / "synthetic" / "manifest.csv").read_text(encoding="utf-8")
    assert "\r" not in text
    assert text.splitlines()[0].split(",") == REAL_MANIFEST_COLUMNS
    frame = pd.read_csv(release[0] / "synthetic" / "manifest.csv")
    assert list(frame.columns) == REAL_MANIFEST_COLUMNS
    slider = frame[frame["trial_type"] == "Number Line Slider"]
    assert len(slider) >= 1 and slider["response_alternatives"].isna().all() and slider["full_prompt"].isna().all()
    assert slider["item"].str.fullmatch(r"0,\d+").all()
    assert set(frame["task"]) == set(TASK_IDS)
    for row in manifest:
        assert row["task_id"] == TASK_IDS[row["task"]]
        assert "" not in row.values(), row  # missing values are the literal NA
        if row["full_prompt"] == "NA" or row["answer"] == "NA":
            continue
        n = 1 + len(row["response_alternatives"].split(","))
        kinds = set(re.findall(r"<(image|option)[1-9]>", row["full_prompt"]))
        assert len(kinds) == 1, row["item_uid"]
        placeholders = re.findall(r"<(?:image|option)([1-9])>", row["full_prompt"])
        assert placeholders == [str(k) for k in range(1, n + 1)], row["item_uid"]
        assert (" or ".join("AB") in row["full_prompt"]) == (n == 2), row["item_uid"]
        assert ("<prompt_image>" in row["full_prompt"]) == (row["prompt_image"] != "NA"), row["item_uid"]
        assert abs(float(row["chance_level"]) - 1 / n) < 0.01, row["item_uid"]
    for task in TASK_IDS:
        uids = [r["item_uid"] for r in manifest if r["task"] == task]
        assert len(uids) == len(set(uids)), task
    matrix = [r for r in manifest if r["task"] == "matrix-reasoning"]
    assert all("T1" in r["answer"] and "T1" not in r["response_alternatives"] for r in matrix)


def test_manifest_parses_like_the_real_one(release: tuple[Path, dict, float]) -> None:
    shared = shared_dir()
    if shared is None:
        pytest.skip("shared/levante-sample not found (set LEVANTE_SHARED); the real manifest is needed")
    real = pd.read_csv(shared / "levante-sample" / "2026-03-24" / "manifest.csv")
    synthetic = pd.read_csv(release[0] / "synthetic" / "manifest.csv")
    assert list(synthetic.columns) == list(real.columns)
    assert dict(synthetic.dtypes.astype(str)) == dict(real.dtypes.astype(str))
    held = synthetic[synthetic["task"].isin(set(real["task"]))]  # a task the real release lacks has its own types
    assert set(held["trial_type"]) - set(real["trial_type"]) == set()
    with open(shared / "levante-sample" / "2026-03-24" / "corpus" / "theory-of-mind" /
              "theory-of-mind-item-bank.csv", encoding="utf-8") as handle:
        assert next(csv.reader(handle)) == REAL_CORPUS_COLUMNS
    trials_header = (shared / "levante-sample" / "irt-fixture" / "trials.csv").open().readline().rstrip("\n")
    assert trials_header == REAL_TRIAL_HEADER


def test_every_referenced_image_exists_opens_and_is_tagged(release: tuple[Path, dict, float],
                                                           manifest: list[dict[str, str]]) -> None:
    visual = release[0] / "synthetic" / "visual"
    referenced: set[Path] = set()
    for row in manifest:
        ext = "webp" if row["task"] == "vocab" else "png"
        stems = [row["prompt_image"]] if row["prompt_image"] != "NA" else []
        if row in image_option_rows([row]):
            stems += [row["answer"], *row["response_alternatives"].split(",")]
        referenced |= {visual / row["task"] / f"{stem}.{ext}" for stem in stems}
    on_disk = set(visual.rglob("*.*"))
    assert referenced == on_disk  # nothing missing, nothing orphaned
    for path in sorted(on_disk):
        with Image.open(path) as img:
            img.load()
            if path.suffix == ".png":
                assert img.text.get("Comment") == TAG, path
            else:
                assert img.format == "WEBP" and img.getexif().get(0x010E) == TAG, path


def _pixels(path: Path) -> np.ndarray:
    with Image.open(path) as img:
        return np.asarray(img.convert("L").resize((128, 128))) < 128


def test_answer_pictures_differ_from_every_distractor(release: tuple[Path, dict, float],
                                                      manifest: list[dict[str, str]]) -> None:
    visual = release[0] / "synthetic" / "visual"
    for row in image_option_rows(manifest):
        ext = "webp" if row["task"] == "vocab" else "png"
        with Image.open(visual / row["task"] / f"{row['answer']}.{ext}") as img:
            answer = np.asarray(img.convert("RGB"))
        for stem in row["response_alternatives"].split(","):
            with Image.open(visual / row["task"] / f"{stem}.{ext}") as img:
                assert not np.array_equal(answer, np.asarray(img.convert("RGB"))), (row["item_uid"], stem)


def test_vocab_answer_shows_the_named_colour(release: tuple[Path, dict, float],
                                             manifest: list[dict[str, str]]) -> None:
    from levante_tasks.synth.draw import COLOURS

    for row in (r for r in manifest if r["task"] == "vocab"):
        colour = row["item"].split()[0]
        for stem in [row["answer"], *row["response_alternatives"].split(",")]:
            with Image.open(release[0] / "synthetic" / "visual" / "vocab" / f"{stem}.webp") as img:
                pixels = np.asarray(img.convert("RGB")).reshape(-1, 3)
            has_colour = bool((np.abs(pixels - np.array(COLOURS[colour])).sum(axis=1) < 6).sum() > 500)
            assert has_colour == stem.startswith(f"{colour}_"), (row["item_uid"], stem)


def test_mental_rotation_is_solved_by_rotating_back(release: tuple[Path, dict, float],
                                                    manifest: list[dict[str, str]]) -> None:
    visual = release[0] / "synthetic" / "visual" / "mental-rotation"
    rows = [r for r in manifest if r["task"] == "mental-rotation"]
    assert rows and all(r["trial_type"] == "2" and r["chance_level"] == "0.5" for r in rows)
    for row in rows:
        angle = int(row["prompt_image"].rsplit("-", 1)[1])
        with Image.open(visual / f"{row['prompt_image']}.png") as img:
            back = img.convert("L").rotate(-angle, fillcolor=255)  # PIL rotates counter-clockwise
        prompt = np.asarray(back.resize((128, 128))) < 128

        def iou(stem: str, prompt: np.ndarray = prompt) -> float:
            other = _pixels(visual / f"{stem}.png")
            return float((prompt & other).sum() / (prompt | other).sum())

        (mirror,) = row["response_alternatives"].split(",")
        assert iou(row["answer"]) > 0.8 > iou(mirror) + 0.1, row["item_uid"]


def test_text_options_do_not_give_the_answer_away(manifest: list[dict[str, str]]) -> None:
    text_rows = [r for r in manifest if "<option1>" in r["full_prompt"] and r["trial_type"] != "Number Comparison"]
    ranks = []
    for row in text_rows:
        options = [row["answer"], *row["response_alternatives"].split(",")]
        values = [float(Fraction(o)) for o in options]  # "3/4" -> 0.75
        ranks.append(sorted(values).index(values[0]) / (len(values) - 1))
        assert len(set(options)) == len(options), row["item_uid"]
    assert len(text_rows) >= 10
    assert np.mean(np.array(ranks) == 1.0) < 0.5 and np.mean(np.array(ranks) == 0.0) < 0.5


def test_tom_manifest_rows_match_corpus_test_rows(release: tuple[Path, dict, float],
                                                  manifest: list[dict[str, str]]) -> None:
    path = release[0] / "synthetic" / "corpus" / "theory-of-mind" / "theory-of-mind-item-bank.csv"
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == REAL_CORPUS_COLUMNS
        corpus = list(reader)
    tests = [r for r in corpus if r["assessment_stage"] == "test_response"]
    rows = [r for r in manifest if r["task"] == "theory-of-mind"]
    assert len(tests) == len(rows) >= 8
    assert {r["task"] for r in corpus} == {"theory-of-mind", "hostile-attribution"}
    for question, row in zip(tests, rows, strict=True):
        assert (question["prompt"], question["answer"], question["response_alternatives"], question["item"]) == (
            row["prompt"], row["answer"], row["response_alternatives"], row["item"])
        assert question["trial_type"] == row["trial_type"]
        assert float(question["chance_level"]) == float(row["chance_level"])
        prefix = "ha_" if question["task"] == "hostile-attribution" else "tom_"
        assert row["item_uid"].startswith(prefix)
        story = [r["prompt"] for r in corpus if r["block_index"] == question["block_index"]
                 and r["assessment_stage"] == "instructions" and r["audio_file"].split("-")[-1].startswith("instr")]
        assert story and all(sentence in row["full_prompt"] for sentence in story[:1])
    kinds = {r["trial_type"] for r in rows}
    assert {"false_belief_question", "reality_check_question"} <= kinds


@pytest.fixture(scope="module")
def children(release: tuple[Path, dict, float]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    root = release[0]
    return (pd.read_csv(root / "children" / "trials.csv"), pd.read_csv(root / "children" / "runs.csv"),
            pd.read_csv(root / "irt" / "item_params.csv"))


def test_children_accuracy_tracks_difficulty_and_age(children: tuple[pd.DataFrame, ...]) -> None:
    trials, runs, params = children
    accuracy = trials.groupby("item_uid")["correct"].mean()
    joined = params.set_index("item_uid").join(accuracy, how="inner")
    assert len(joined) == len(params)
    for task, group in joined.groupby("task"):
        assert np.corrcoef(group["correct"], group["b"])[0, 1] < -0.5, task
    per_child = trials.groupby("user_id")["correct"].mean()
    ages = runs.drop_duplicates("user_id").set_index("user_id")["age"]
    assert np.corrcoef(per_child, ages.loc[per_child.index])[0, 1] > 0.3
    assert np.corrcoef(runs["age"], runs["true_theta"])[0, 1] > 0.4
    estimates = trials.drop_duplicates("run_id").set_index("run_id")["theta_estimate"]
    assert np.corrcoef(estimates, runs.set_index("run_id").loc[estimates.index, "true_theta"])[0, 1] > 0.6
    assert runs["age"].between(5, 12).all()


def test_trials_follow_the_fixture_layout_and_response_rules(release: tuple[Path, dict, float],
                                                             children: tuple[pd.DataFrame, ...],
                                                             manifest: list[dict[str, str]]) -> None:
    trials, _, params = children
    lines = (release[0] / "children" / "trials.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == TRIAL_HEADER
    assert re.match(r'^"synth_site_\w+","synth_\w+_pilot","[^"]+","[^"]+","[^"]+","[^"]+",\d+,"[^"]+",.*,'
                    r'(TRUE|FALSE),\d+,".*,"(es-CO|de-DE|en-US)"$', lines[1])
    right = trials[trials["correct"]]
    wrong = trials[~trials["correct"]]
    assert (right["response"] == right["answer"]).all()
    assert (wrong["response"] != wrong["answer"]).all()
    assert all(resp in alts.split(",") for resp, alts in zip(wrong["response"], wrong["distractors"], strict=True))
    multi = wrong[wrong["distractors"].str.contains(",")]
    first = (multi["response"] == multi["distractors"].str.split(",").str[0]).mean()
    assert first > 0.4  # weights 2:1:1 (or 2:1) favour the first distractor
    by_uid = {canonical_uid(uid): uid for uid in params["item_uid"]}
    manifest_uids = {r["item_uid"]: r for r in manifest}
    assert set(by_uid) <= set(manifest_uids)
    assert any(uid.startswith("vocab_word_") for uid in params["item_uid"])  # Redivis spelling, as real data
    for uid, row in zip(params["item_uid"], params.itertuples(), strict=True):
        item = manifest_uids[canonical_uid(uid)]
        assert row.g == float(item["chance_level"])
        assert abs(row.b - (-row.d / row.a1)) < 1e-3
        assert (row.a1 == 1.0) == (row.task not in ("mental-rotation", "same-different-selection"))
    scored_types = set(trials["item_group"])
    assert "Number Line Slider" not in scored_types and "practice" not in scored_types


def test_every_output_is_labelled_synthetic(release: tuple[Path, dict, float]) -> None:
    root = release[0]
    note = (root / "synthetic" / "SYNTHETIC.md").read_text(encoding="utf-8")
    assert "SYNTHETIC" in note and "seed 11" in note and str(root) not in note
    for name in ("children/trials.csv", "children/runs.csv", "irt/groups.csv"):
        frame = pd.read_csv(root / name)
        assert frame["dataset"].str.fullmatch(r"synth_\w+_pilot").all(), name
        if "site" in frame:
            assert frame["site"].str.startswith("synth_").all(), name
    assert (pd.read_csv(root / "irt" / "item_params.csv")["dataset"] == "synthetic").all()
    corpus = pd.read_csv(root / "synthetic" / "corpus" / "theory-of-mind" / "theory-of-mind-item-bank.csv")
    assert corpus["source"].str.contains("synthetic").all()
    groups = pd.read_csv(root / "irt" / "groups.csv")
    assert set(groups["task"]) == set(TASK_IDS) and (groups["var"] > 0).all()
    for record in groups["record"].unique():
        assert (root / "irt" / record).is_file() and (root / "irt" / MARKER_NAME).is_file()


def test_cli_writes_and_replaces_only_synthetic_folders(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "rel"
    assert main(["synth", "--out", str(out), "--seed", "3", "--children", "20", "--version", "v-test"]) == 0
    assert "v-test" in capsys.readouterr().out
    stale = out / "v-test" / "visual" / "vocab" / "stale.webp"
    stale.write_bytes(b"x")
    assert main(["synth", "--out", str(out), "--seed", "3", "--children", "20", "--version", "v-test"]) == 0
    assert not stale.exists()
    assert not [p for p in out.iterdir() if p.name.startswith(".synth-")]
    (out / "real").mkdir()
    (out / "real" / "manifest.csv").write_text("task\n")
    assert main(["synth", "--out", str(out), "--seed", "3", "--children", "20", "--version", "real"]) == 2
    assert "not a synthetic release folder" in capsys.readouterr().err
    assert (out / "real" / "manifest.csv").read_text() == "task\n"
    assert main(["synth", "--out", str(out), "--seed", "-1"]) == 2


def test_release_passes_strict_prepare(release: tuple[Path, dict, float], tmp_path: Path) -> None:
    from levante_tasks.data.prepare import prepare

    result = prepare(str(release[0]), "synthetic", str(tmp_path / "data"), strict=True, progress=False)
    built = {summary.task: summary for summary in result.tasks}
    assert set(built) == set(TASK_IDS)
    scored = release[1]["scored_items_per_task"]
    for task, summary in built.items():
        # Everything children answer is a dataset item (sliders are items too; HA / instruction rows are not).
        assert summary.n_items >= scored[task], (task, summary)
    assert sum(built["theory-of-mind"].excluded.values()) == 2  # the two hostile-attribution rows


# ------------------------------------------------------------------ sites, languages, records and translations

TABLE = Path("synthetic") / "translations" / "item-bank-translations.csv"


@pytest.fixture(scope="module")
def table(release: tuple[Path, dict, float]) -> dict[str, dict[str, str]]:
    """The release's translation table, item_id -> row."""
    with open(release[0] / TABLE, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len({row["item_id"] for row in rows}) == len(rows)
    return {row["item_id"]: row for row in rows}


def test_children_come_from_three_sites_in_levante_proportions(release: tuple[Path, dict, float],
                                                               children: tuple[pd.DataFrame, ...]) -> None:
    from levante_tasks.synth.populations import POPULATIONS, interleave

    trials, runs, _ = children
    n = release[1]["n_children"]
    picks = interleave([p.weight for p in POPULATIONS], n)
    total = sum(p.weight for p in POPULATIONS)
    for k, population in enumerate(POPULATIONS):
        assert abs(picks.count(k) - n * population.weight / total) < 1  # 1,020 : 339 : 188 scaled
        assert abs(picks[: n // 3].count(k) - n // 3 * population.weight / total) < 1  # interleaved, not blocks
    users = runs.drop_duplicates("user_id")
    for population in POPULATIONS:
        mine = users[users["dataset"] == population.dataset]
        assert abs(len(mine) - n * population.weight / total) <= 4  # a child may take no task
        assert (mine["site"] == population.site).all() and (mine["language"] == population.language).all()
    joined = trials[["run_id", "language", "dataset", "site"]].drop_duplicates().merge(runs, on="run_id",
                                                                                     suffixes=("", "_run"))
    assert len(joined) == len(runs)  # one language, dataset and site per run, the same in trials and runs
    for column in ("language", "dataset", "site"):
        assert (joined[column] == joined[f"{column}_run"]).all()


def test_each_language_has_its_own_ability_distribution_and_age_slope() -> None:
    """The generator itself, on 6,000 children of one multigroup task (common scale) and one by-language task
    (each language's own scale, mean 0): means, SDs and age slopes as the populations say, and distinct."""
    from levante_tasks.synth import children as kids
    from levante_tasks.synth.items import stream
    from levante_tasks.synth.populations import POPULATIONS, draw_children
    from levante_tasks.synth.records import task_plans
    from levante_tasks.synth.registry import SYNTH_TASKS

    rng = np.random.default_rng(4)
    plans = {}
    for task in ("trog", "vocab"):
        items = SYNTH_TASKS[task].build(stream(0, task)).items
        plans[task] = task_plans(task, kids.item_truths(items, stream(0, f"irt/{task}")), {}, 0)
    runs = pd.DataFrame(kids.simulate(draw_children(6000, rng), plans, rng)[0])
    slopes = {}
    for population in POPULATIONS:
        for task, centre in (("trog", population.mean), ("vocab", 0.0)):
            part = runs[(runs["dataset"] == population.dataset) & (runs["task"] == task)]
            slope, intercept = np.polyfit(part["age"] - 8.5, part["true_theta"], 1)
            assert abs(intercept - centre) < 0.1, (population.dataset, task, intercept)
            assert abs(slope - population.slope) < 0.05, (population.dataset, task, slope)
            assert abs(part["true_theta"].std() - population.sd) < 0.08, (population.dataset, task)
            slopes[population.dataset, task] = slope
    by_mean = sorted(POPULATIONS, key=lambda p: p.mean)
    assert [p.language for p in by_mean] == ["es-CO", "en-US", "de-DE"]
    assert slopes["synth_de_pilot", "trog"] - slopes["synth_co_pilot", "trog"] > 0.05


def test_records_are_read_by_compare_and_reproduce_the_childrens_scores(release: tuple[Path, dict, float]) -> None:
    """Every record under irt/registry/ reads with `compare`'s reader (groups, reference, priors as groups.csv
    says), and each run's trials rescored under its record and group give the trials' theta_estimate."""
    from collections import Counter

    from levante_tasks.compare.humans import read_trials, response_matrix
    from levante_tasks.compare.irt import read_irt
    from levante_tasks.compare.scoring import eap_rows

    root = release[0]
    groups = pd.read_csv(root / "irt" / "groups.csv")
    trials = read_trials(root / "children" / "trials.csv")
    raw = pd.read_csv(root / "children" / "trials.csv")
    expected = raw.drop_duplicates("run_id").set_index("run_id")["theta_estimate"]
    by_language = {"vocab", "theory-of-mind"}
    assert set(groups.loc[groups["record"].str.contains("/by_language/"), "task"]) == by_language
    for record, rows in groups.groupby("record"):
        (model,) = read_irt(root / "irt" / record)
        task = rows["task"].iloc[0]
        if task in by_language:
            assert len(rows) == 1 and [g.name for g in model.groups] == ["all"]
            assert record.endswith("_rasch_f1.csv") and model.reference.mean == 0.0
        else:
            assert model.reference.name == "synth_ca_pilot" and record.endswith("_f1_scalar.csv")
            assert sorted(g.name for g in model.groups) == sorted(rows["group"])
            wide = pd.read_csv(root / "irt" / record)
            items = wide[wide["item"] != "GROUP"].pivot_table(index=["item", "name"], columns="group", values="value")
            assert (items.nunique(axis=1) == 1).all()  # scalar invariance: every group has the same item rows
        for row in rows.itertuples():
            prior = model.group(row.group)
            assert (prior.mean, prior.var) == (row.mean, row.var)
        mine = trials[(trials["task_id"] == task) & trials["dataset"].isin(set(rows["dataset"]))]
        runs, matrix = response_matrix(model, mine, Counter())
        dataset = raw.drop_duplicates("run_id").set_index("run_id")["dataset"].reindex(runs)
        group = dataset.map(dict(zip(rows["dataset"], rows["group"], strict=True))).to_numpy(dtype=object)
        theta, _ = eap_rows(model, matrix, group)
        assert len(runs) > 10 and np.allclose(theta, expected.reindex(runs), atol=1e-9), record


def test_by_language_records_differ_between_languages(release: tuple[Path, dict, float]) -> None:
    """Configural: each language's record has its own difficulties (not one shared set moved by a constant), and
    only the items its language translates."""
    from levante_tasks.compare.irt import read_irt

    root = release[0] / "irt" / "registry" / "vocab" / "by_language"
    b = pd.DataFrame({lang: read_irt(root / lang / "vocab_rasch_f1.csv")[0].first_instances()["b"]
                      for lang in ("en", "de", "es")})
    assert b["en"].notna().sum() == 18 and b["de"].notna().sum() == b["es"].notna().sum() == 17
    for lang in ("de", "es"):
        moved = (b[lang] - b["en"]).dropna()
        assert moved.std() > 0.3, lang  # LANGUAGE_ITEM_SD 0.4 on each side
    assert (b["de"] - b["en"]).mean() < (b["es"] - b["en"]).mean()  # German children are stronger: easier items


def test_translation_table_has_the_real_layout(release: tuple[Path, dict, float],
                                               table: dict[str, dict[str, str]],
                                               manifest: list[dict[str, str]]) -> None:
    from levante_tasks.synth.translations import COLUMNS

    text = (release[0] / TABLE).read_text(encoding="utf-8")
    assert "\r" not in text and text.splitlines()[0].split(",") == list(COLUMNS)
    shared = shared_dir()
    if shared is not None:  # the header of LEVANTE's table (levante_translations 1cb5bfc), column for column
        real = (shared / "levante-sample" / "translations" / "item_bank_translations.csv").open(encoding="utf-8")
        assert text.splitlines()[0] == real.readline().rstrip("\n")
    vocab = [r for r in manifest if r["task"] == "vocab"]
    assert [table[f"vocab-item-{k:03d}"]["en"] for k in range(1, len(vocab) + 1)] == [f"the {r['item']}" for r in vocab]
    for row in (r for r in manifest if r["task"] == "trog"):
        number = int(row["answer"].split("-")[0])
        en = row["item"] if " " in row["item"] else f"{row['prompt'][:-3]} {row['item']}."
        assert table[f"trog-item-{number}"]["en"] == en
    assert all(not row[c] for row in table.values() for c in ("fr-CA", "nl", "de-CH", "es-AR", "en-GH", "isHidden"))
    german = " ".join(row["de"] for row in table.values())
    spanish = " ".join(row["es-CO"] for row in table.values())
    assert all(c in german for c in "äöüß") and all(c in spanish for c in "ñáéíóú¿¡")
    assert "Wahle" not in german and table["vocab-item-001"]["en"].startswith("the ")


def test_translation_gaps_leave_items_out_of_that_language(release: tuple[Path, dict, float],
                                                           table: dict[str, dict[str, str]],
                                                           manifest: list[dict[str, str]],
                                                           children: tuple[pd.DataFrame, ...]) -> None:
    """The deliberately untranslated cells (empty, NO APPROVED TRANSLATION, a copy of the English) are exactly
    GAPS; every other per-item cell is a translation; children of that language are never given those items."""
    from levante_tasks.synth.translations import GAPS, NOT_APPROVED

    assert table["vocab-item-007"]["de"] == "" and table["vocab-item-012"]["es-CO"] == NOT_APPROVED
    assert table["trog-item-2"]["de"] == table["trog-item-2"]["en"]
    assert table["ToM-scene3-q3-reality_check"]["es-CO"] == ""
    per_item = [i for i in table if i.startswith(("vocab-item-", "trog-item-", "ToM-scene"))]
    for item_id in per_item:
        for locale in ("de", "es-CO"):
            cell, en = table[item_id][locale], table[item_id]["en"]
            assert ((item_id, locale) in GAPS) == (cell in ("", NOT_APPROVED) or cell == en), (item_id, locale)
    vocab = [r["item_uid"] for r in manifest if r["task"] == "vocab"]
    tom = {r["prompt"]: r["item_uid"] for r in manifest if r["task"] == "theory-of-mind"}
    trog = {int(r["answer"].split("-")[0]): r["item_uid"] for r in manifest if r["task"] == "trog"}
    left_out = {"de-DE": {vocab[6], trog[2]}, "es-CO": {vocab[11], tom["Where are the cookies really?"]}}
    trials, _, _ = children
    asked = trials.assign(uid=trials["item_uid"].map(canonical_uid)).groupby("language")["uid"].agg(set)
    for language, uids in left_out.items():
        assert not uids & asked[language], language
        assert uids <= asked["en-US"]


def test_coverage_script_matches_every_synthetic_item(release: tuple[Path, dict, float], tmp_path: Path) -> None:
    """LEVANTE-sample's coverage.py, run on the synthetic release laid out as the sample, matches every item by its
    English text and counts the gaps (it reads NO APPROVED TRANSLATION as text, as it has no such rule)."""
    import subprocess
    import sys

    shared = shared_dir()
    if shared is None:
        pytest.skip("shared/levante-sample not found (set LEVANTE_SHARED); coverage.py is needed")
    root = release[0] / "synthetic"
    sample = tmp_path / "2026-03-24"
    (sample / "corpus" / "theory-of-mind").mkdir(parents=True)
    (tmp_path / "translations").mkdir()
    (sample / "manifest.csv").write_bytes((root / "manifest.csv").read_bytes())
    corpus = Path("corpus") / "theory-of-mind" / "theory-of-mind-item-bank.csv"
    (sample / corpus).write_bytes((root / corpus).read_bytes())
    (tmp_path / "translations" / "item_bank_translations.csv").write_bytes((release[0] / TABLE).read_bytes())
    script = tmp_path / "translations" / "coverage.py"
    script.write_bytes((shared / "levante-sample" / "translations" / "coverage.py").read_bytes())
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout
    counts = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 14 and cells[1].isdigit():
            counts[cells[0]] = dict(zip(("items", "id", "text", "trog#", "corpus", "matched", "unmatched",
                                         "de ok", "de =en", "de empty", "es ok", "es =en", "es empty"),
                                        map(int, cells[1:]), strict=True))
    assert set(counts) == set(TASK_IDS) | {"all"}
    for task, found in counts.items():
        assert found["matched"] == found["items"] == found["text"] and found["unmatched"] == 0, task
    assert counts["trog"]["trog#"] == counts["trog"]["items"]
    assert counts["theory-of-mind"]["corpus"] == counts["theory-of-mind"]["items"]
    assert (counts["vocab"]["de empty"], counts["trog"]["de =en"], counts["theory-of-mind"]["es empty"]) == (1, 1, 1)
    assert counts["all"]["de ok"] == counts["all"]["items"] - 2 and counts["all"]["es ok"] == counts["all"]["items"] - 1


def test_locale_words_are_inflected() -> None:
    from levante_tasks.synth.items_language import noun_phrase, predicate

    assert noun_phrase("de", "circle", "red") == "der rote Kreis"
    assert noun_phrase("de", "diamond", "blue", case="dative") == "der blauen Raute"
    assert noun_phrase("de", "square", "orange") == "das orangefarbene Quadrat"
    assert noun_phrase("es-CO", "star", "yellow") == "la estrella amarilla"
    assert noun_phrase("es-CO", "cross", plural=True) == "las cruces"
    assert (predicate("es-CO", "star", "red"), predicate("es-CO", "circle", "red"), predicate("de", "star", "red")) == (
        "roja", "rojo", "rot")
    with pytest.raises(ValueError):
        noun_phrase("de", "circle", "red", plural=True)
