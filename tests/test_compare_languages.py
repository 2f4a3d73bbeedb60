"""Issue 29.4: children by dataset and language. A child's IRT group comes from its `dataset`, then its `site`, then
the reference prior (counted); its language from the trials' `language`, else the runs'; a model run in locale L meets
the children of L (vocab and theory-of-mind on L's by_language record); the report shows each language side by side
and flags the items whose drop in a locale differs between the models and the children."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from compare_inputs import canonical, compared, exclusions, trog_trials, write_items
from faults import one_error_line
from shared_paths import irt_fixture_dir

from levante_tasks.cli import main
from levante_tasks.compare.crosslanguage import cross_language_items
from levante_tasks.compare.eap import eap
from levante_tasks.compare.irt import read_irt
from levante_tasks.compare.languages import NOT_RECORDED
from levante_tasks.compare.pipeline import Settings, run_compare
from levante_tasks.compare.records import read_records

TROG = "trog_rasch_f1_scalar.rds"
FLIPPED = 10  # items the Spanish run gets wrong that the English run gets right


def simulate_children(n: int, group: str, dataset: str, site: str, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trials, runs) of `n` new children drawn from the trog record's own item parameters and `group`'s prior,
    each answering every item once; a wrong answer names the first distractor."""
    model = read_irt(irt_fixture_dir() / TROG)[0]
    items = model.first_instances()
    prior = model.group(group)
    options = canonical(trog_trials())
    rng = np.random.default_rng(seed)
    theta = rng.normal(prior.mean, np.sqrt(prior.var), n)
    p = items["g"].to_numpy() + (items["u"] - items["g"]).to_numpy() / (
        1 + np.exp(-(items["a1"].to_numpy() * theta[:, None] + items["d"].to_numpy())))
    correct = rng.random(p.shape) < p
    rows = []
    for k in range(n):
        run = f"run_{dataset}_{site}_{k:03d}"
        for j, uid in enumerate(items.index):
            answer, *distractors = options[uid]
            rows.append({"site": site, "dataset": dataset, "task_id": "trog", "run_id": run, "trial_number": j + 1,
                         "item_uid": uid, "answer": answer, "distractors": ",".join(distractors),
                         "response": answer if correct[k, j] else distractors[0], "correct": str(correct[k, j])})
    runs = pd.DataFrame({"run_id": [f"run_{dataset}_{site}_{k:03d}" for k in range(n)],
                         "age": rng.uniform(5, 12, n).round(2)})
    return pd.DataFrame(rows), runs


def write_inputs(folder: Path, trials: pd.DataFrame, runs: pd.DataFrame) -> tuple[Path, Path]:
    """Trials and runs CSVs in `folder`."""
    trials_path, runs_path = folder / "trials.csv", folder / "runs.csv"
    trials.to_csv(trials_path, index=False)
    runs.to_csv(runs_path, index=False)
    return trials_path, runs_path


def model_records(path: Path, spanish: bool = True, task: str = "trog") -> tuple[Path, list[str]]:
    """Records of a model `m` run in English (right on every item easier than 0) and, with `spanish`, in es-CO (the
    same but wrong on the FLIPPED easiest items), plus an English-only `noise` run; returns the flipped uids."""
    params = pd.read_csv(irt_fixture_dir() / "true_item_params.csv")
    trog = params[params["task"] == "trog"].sort_values("b")
    flipped = list(trog["item_uid"][:FLIPPED])
    rng = np.random.default_rng(1)
    rows = []
    for uid, b in zip(trog["item_uid"], trog["b"], strict=True):
        scores = json.dumps([2.0, 0.5, 0.0, -0.5])
        rows.append({"model": "m", "task": task, "item_uid": uid, "correct": int(b < 0), "option_scores": scores,
                     "locale": ""})
        rows.append({"model": "noise", "task": task, "item_uid": uid, "correct": int(rng.random() < 0.5),
                     "option_scores": json.dumps(rng.normal(0, 1, 4).tolist()), "locale": "en"})
        if spanish:
            rows.append({"model": "m", "task": task, "item_uid": uid, "correct": int(b < 0 and uid not in flipped),
                         "option_scores": scores, "locale": "es-CO"})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path, flipped


def run(tmp: Path, trials: Path, runs: Path, records: Path, *irt: tuple[str | None, Path], name: str = "out",
        **settings: object) -> tuple[Path, dict]:
    """run_compare with small bootstraps and the fixture's canonical options."""
    items = write_items(canonical(trog_trials()), tmp / f"{name}_items.csv")
    out = tmp / name
    summary = run_compare(list(irt) or [(None, irt_fixture_dir() / TROG)], trials, runs, records, out,
                          Settings(**{"n_boot": 30, "n_perm": 50, "plots": False, **settings}), items_path=items)
    return out, summary


# ---------------------------------------------------------------- the IRT group: dataset, then site, then reference


def test_dataset_names_the_group_before_site(tmp_path: Path) -> None:
    """The issue's case: 60 children with dataset=co_pilot, site=pilot_uniandes_co land in co_pilot (not under the
    reference prior); children whose dataset names no group land by site (dataset `fixture`, site = a group), and
    dataset wins when both name one; only children whose dataset and site both name no group get the reference
    prior, counted."""
    colombia, colombia_runs = simulate_children(60, "co_pilot", "co_pilot", "pilot_uniandes_co", seed=3)
    fixture = trog_trials()
    by_site = fixture[fixture["site"] == "ca_pilot"]
    by_site = by_site[by_site["run_id"].isin(sorted(set(by_site["run_id"]))[:20])]
    by_site = by_site.assign(run_id="new_" + by_site["run_id"])  # not in the calibration: rescored
    unseen, unseen_runs = simulate_children(7, "ca_pilot", "pilot_new_gb", "pilot_new_gb", seed=4)
    both, both_runs = simulate_children(5, "co_pilot", "co_pilot", "ca_pilot", seed=5)  # both name a group
    runs = pd.read_csv(irt_fixture_dir() / "runs.csv", dtype={"run_id": str})
    runs = pd.concat([runs.assign(run_id="new_" + runs["run_id"]), colombia_runs, unseen_runs, both_runs])
    trials, runs_path = write_inputs(tmp_path, pd.concat([colombia, by_site, unseen, both]), runs)
    out, summary = run(tmp_path, trials, runs_path, model_records(tmp_path / "records.csv", spanish=False)[0])

    children = pd.read_csv(out / "children_theta.csv").set_index("run_id")
    new = children.loc[colombia_runs["run_id"]]
    assert (new["group"] == "co_pilot").all() and (new["group_source"] == "dataset").all()
    assert (new["theta_source"] == "rescored").all()
    model = read_irt(irt_fixture_dir() / TROG)[0]
    items = model.first_instances()
    matrix = colombia.pivot(index="run_id", columns="item_uid", values="correct").eq("True").astype(float)
    matrix = matrix.loc[colombia_runs["run_id"], items.index].to_numpy()
    prior = model.group("co_pilot")
    expected, _ = eap(matrix, *(items[c].to_numpy(float) for c in ("a1", "d", "g", "u")), prior.mean, prior.var)
    np.testing.assert_allclose(new["theta"], expected, atol=1e-12)  # scored under co_pilot's prior
    assert (children.loc[by_site["run_id"].unique(), "group_source"] == "site").all()
    assert (children.loc[both_runs["run_id"], "group"] == "co_pilot").all()  # dataset first
    assert (children.loc[unseen_runs["run_id"], "group_source"] == "reference prior").all()

    theta = pd.read_csv(out / "model_theta.csv")
    per_group = theta[theta["estimator"] == "EAP"].groupby("group")["n_children_in_group"].first()
    assert per_group.to_dict() == {"co_pilot": 65, "ca_pilot": 27}  # 20 by site + 7 unseen under the reference
    counted = exclusions(summary)
    assert counted["runs_rescored"] == 92
    assert counted["runs_rescored_unseen_group_reference_prior"] == 7  # never the 60 of co_pilot
    info = compared(summary)
    assert info["n_children_by_group"] == {"ca_pilot": 27, "co_pilot": 65}
    assert info["n_children_by_group_source"] == {"dataset": 65, "site": 20, "reference prior": 7}
    assert "ca_pilot 27; co_pilot 65 (dataset 65, site 20, reference prior 7)" in (out / "comparison.md").read_text()


# ---------------------------------------------------------------- languages


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The fixture's trog children with languages: ca_pilot runs say `en-CA` in the trials (2 of them also `de-DE`
    in one trial: conflicting), co_pilot runs say `es-CO` in the runs file only (5 say `pt-BR`, 3 nothing)."""
    folder = tmp_path_factory.mktemp("labelled")
    trials = trog_trials()
    trials["language"] = np.where(trials["site"] == "ca_pilot", "en-CA", "")
    ca_runs = sorted(set(trials.loc[trials["site"] == "ca_pilot", "run_id"]))
    conflicting = ca_runs[:2]
    for run_id in conflicting:
        trials.loc[trials.index[trials["run_id"] == run_id][0], "language"] = "de-DE"
    runs = pd.read_csv(irt_fixture_dir() / "runs.csv", dtype={"run_id": str})
    co_runs = sorted(runs.loc[runs["site"] == "co_pilot", "run_id"])
    runs["language"] = np.where(runs["site"] == "co_pilot", "es-CO", "")
    runs.loc[runs["run_id"].isin(co_runs[:5]), "language"] = "pt-BR"
    runs.loc[runs["run_id"].isin(co_runs[5:8]), "language"] = ""
    trials_path, runs_path = write_inputs(folder, trials, runs)
    records, flipped = model_records(folder / "records.csv")
    english = set(ca_runs) - set(conflicting)
    spanish = set(co_runs[8:])
    return {"folder": folder, "trials": trials_path, "runs": runs_path, "records": records, "flipped": flipped,
            "english": english, "spanish": spanish, "frame": trials}


def cli(tmp_path: Path, inputs: dict, *extra: str, irt: tuple[str, ...] = ()) -> int:
    """`levante-tasks compare` on the labelled inputs (default: the trog record)."""
    items = write_items(canonical(trog_trials()), tmp_path / "items.csv")
    irt_args = [a for value in (irt or (str(irt_fixture_dir() / TROG),)) for a in ("--irt", value)]
    return main(["compare", *irt_args, "--trials", str(inputs["trials"]), "--runs", str(inputs["runs"]),
                 "--models", str(inputs["records"]), "--items", str(items), "--out", str(tmp_path / "out"),
                 "--n-boot", "30", "--n-perm", "50", "--no-plots", *extra])


def test_each_run_meets_the_children_of_its_locale(tmp_path: Path, labelled: dict,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(tmp_path, labelled) == 0
    printed = capsys.readouterr().out
    out = tmp_path / "out"
    summary = json.loads((out / "comparison.json").read_text())
    languages = summary["tasks"]["trog"]["languages"]
    assert list(languages) == ["en", "es-CO"]
    assert sorted(languages["en"]["models"]) == ["m", "noise"] and list(languages["es-CO"]["models"]) == ["m/es-CO"]
    assert languages["es-CO"]["irt_model"] == languages["en"]["irt_model"] == "trog_rasch_f1_scalar"  # one record
    children = pd.read_csv(out / "children_theta.csv", dtype={"run_id": str})
    assert set(children.loc[children["children_language"] == "en", "run_id"]) == labelled["english"]
    assert set(children.loc[children["children_language"] == "es-CO", "run_id"]) == labelled["spanish"]
    assert languages["en"]["n_children"] == 148 and languages["es-CO"]["n_children"] == 142
    assert summary["languages"] == {"recorded": True, "source": "trials and runs", "unknown_tags": {"pt-BR": 5}}
    counted = {e["reason"]: e["count"] for e in summary["exclusions"] if not e["task"]}
    assert counted["runs_language_unknown_tag"] == 5 and counted["runs_language_not_recorded"] == 3
    assert counted["runs_language_conflicting"] == 2
    for name in ("model_theta", "difficulty", "kl_summary", "age_equivalence", "model_items", "kl_bins"):
        table = pd.read_csv(out / f"{name}.csv", keep_default_na=False)
        assert (table["locale"] == table["children_language"]).all(), name  # no run meets another language
    theta = pd.read_csv(out / "model_theta.csv")
    spanish = theta[(theta["model"] == "m/es-CO") & theta["is_reference"].astype(bool)]
    english = theta[(theta["model"] == "m") & theta["is_reference"].astype(bool)]
    assert float(spanish["theta"].iloc[0]) < float(english["theta"].iloc[0])  # wrong on 10 more items
    report = (out / "comparison.md").read_text()
    assert "| English (en) | 148 | `trog_rasch_f1_scalar` |" in report
    assert "| Spanish (Colombia) (es-CO) | 142 | `trog_rasch_f1_scalar` |" in report
    assert "| Spanish (Colombia) (es-CO) | es-CO | m/es-CO | 99 |" in report
    assert "trog: children by language: en 148 runs (2 model run(s)), es-CO 142 runs (1 model run(s))" in printed
    assert "pt-BR 5 runs" in printed and "`pt-BR` (5 runs)" in report


def test_cross_language_items_flag_the_runs_drop_the_children_do_not_share(tmp_path: Path, labelled: dict,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The Spanish run is wrong on FLIPPED items it gets right in English; the children's proportions correct per
    language are recomputed here from the trials; exactly the flipped items are flagged, and the CSV, the report
    and the printed line agree."""
    assert cli(tmp_path, labelled) == 0
    printed = capsys.readouterr().out
    out = tmp_path / "out"
    table = pd.read_csv(out / "cross_language_items.csv").set_index("item_uid")
    assert (table["locale"] == "es-CO").all() and len(table) == 99 and (table["n_model_runs"] == 1).all()
    trials = labelled["frame"]
    language = np.where(trials["run_id"].isin(labelled["english"]), "en",
                        np.where(trials["run_id"].isin(labelled["spanish"]), "es-CO", ""))
    correct = trials["correct"].str.upper().eq("TRUE").astype(float)
    p = correct.groupby([trials["item_uid"], language]).mean().unstack()
    n = correct.groupby([trials["item_uid"], language]).size().unstack()
    np.testing.assert_allclose(table["children_p_correct_en"], p.loc[table.index, "en"], atol=1e-12)
    np.testing.assert_allclose(table["children_p_correct"], p.loc[table.index, "es-CO"], atol=1e-12)
    assert (table["n_children_trials_en"] == n.loc[table.index, "en"]).all()
    expected_drop = p.loc[table.index, "en"] - p.loc[table.index, "es-CO"]
    np.testing.assert_allclose(table["children_drop"], expected_drop, atol=1e-12)
    assert table.loc[labelled["flipped"], "model_drop"].eq(1).all()
    assert table["model_drop"].drop(labelled["flipped"]).eq(0).all()
    assert set(table.index[table["flagged"]]) == set(labelled["flipped"])
    assert sorted(table["rank"].dropna().astype(int)) == list(range(1, 100))
    assert (table.loc[table["rank"] <= FLIPPED].index.isin(labelled["flipped"])).all()  # the flagged rank first
    report = (out / "comparison.md").read_text()
    assert f"trog, Spanish (Colombia) (es-CO): 99 items with paired model runs, 99 with children of both " \
           f"languages, {FLIPPED} flagged." in report
    top = table.sort_values("rank").iloc[0]
    assert (f"| 1 | {top.name} | 1 | 1.00 -> 0.00 | 1.00 | {top['children_p_correct_en']:.2f} -> "
            f"{top['children_p_correct']:.2f} | {top['children_drop']:.2f} | {top['drop_difference']:.2f} |") in report
    assert f"cross-language items: {FLIPPED} flagged of 99 item x locale rows with children of both" in printed
    summary = json.loads((out / "comparison.json").read_text())
    assert summary["cross_language_items"] == [{"task": "trog", "locale": "es-CO", "items": 99, "with_children": 99,
                                                "flagged": FLIPPED}]


def test_across_languages_is_explicit_and_labelled(tmp_path: Path, labelled: dict) -> None:
    assert cli(tmp_path, labelled, "--across-languages") == 0
    out = tmp_path / "out"
    summary = json.loads((out / "comparison.json").read_text())
    languages = summary["tasks"]["trog"]["languages"]
    assert {lang: sorted(info["models"]) for lang, info in languages.items()} == {
        "en": ["m", "m/es-CO", "noise"], "es-CO": ["m", "m/es-CO", "noise"]}
    assert summary["settings"]["across_languages"] is True
    theta = pd.read_csv(out / "model_theta.csv")
    pairs = set(zip(theta["locale"], theta["children_language"], strict=True))
    assert pairs == {("en", "en"), ("es-CO", "en"), ("en", "es-CO"), ("es-CO", "es-CO")}
    report = (out / "comparison.md").read_text()
    assert "**Across languages** (`--across-languages`)" in report
    assert "| English (en) | es-CO | m/es-CO |" in report and "| Spanish (Colombia) (es-CO) | en | m |" in report


def test_run_without_children_of_its_language_is_not_compared(tmp_path: Path, labelled: dict,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """German runs and English/Spanish children: nothing compared, one line saying why and naming the flag."""
    records = pd.read_csv(labelled["records"], keep_default_na=False)
    german = tmp_path / "german.csv"
    records[records["locale"] == "es-CO"].assign(locale="de").to_csv(german, index=False)
    assert cli(tmp_path, {**labelled, "records": german}) == 2
    err = one_error_line(capsys.readouterr().err)
    assert "nothing compared: no model run meets children of its language (model runs' locales: de; children's " \
           "languages: en, es-CO); pass --across-languages" in err
    assert not (tmp_path / "out").exists()


def test_no_language_recorded_pools_the_children_and_says_so(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """An older export (no language anywhere): every run, in any locale, meets all children, labelled."""
    records, _ = model_records(tmp_path / "records.csv")
    folder = irt_fixture_dir()
    assert main(["compare", "--irt", str(folder / TROG), "--trials", str(folder / "trials.csv"), "--runs",
                 str(folder / "runs.csv"), "--models", str(records), "--out", str(tmp_path / "out"), "--n-boot",
                 "20", "--n-perm", "20", "--no-plots"]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((tmp_path / "out" / "comparison.json").read_text())
    assert list(summary["tasks"]["trog"]["languages"]) == [NOT_RECORDED]
    assert sorted(compared(summary)["models"]) == ["m", "m/es-CO", "noise"]
    assert "children's language not recorded (no language column in the trials or runs): all children pooled" in printed
    assert "**Children's language not recorded**" in (tmp_path / "out" / "comparison.md").read_text()
    theta = pd.read_csv(tmp_path / "out" / "model_theta.csv")
    assert set(theta["children_language"]) == {NOT_RECORDED} and set(theta["locale"]) == {"en", "es-CO"}


# ---------------------------------------------------------------- by_language records (vocab, theory-of-mind)


def vocab_records(folder: Path) -> tuple[Path, Path]:
    """Two single-group vocab records as item-parameter CSVs on the fixture's trog items (the task comes from
    `--irt vocab...=`): English, and German whose items are 1 logit harder."""
    params = pd.read_csv(irt_fixture_dir() / "true_item_params.csv")
    trog = params[params["task"] == "trog"][["item_uid", "a1", "d", "g"]]
    english, german = folder / "vocab_en.csv", folder / "vocab_de.csv"
    trog.to_csv(english, index=False)
    trog.assign(d=trog["d"] - 1.0).to_csv(german, index=False)
    return english, german


@pytest.fixture(scope="module")
def german(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The fixture's children as vocab children: ca_pilot English (en-US), co_pilot German (de-DE); a model run
    in English and in German."""
    folder = tmp_path_factory.mktemp("german")
    trials = trog_trials().assign(task_id="vocab")
    trials["language"] = np.where(trials["site"] == "ca_pilot", "en-US", "de-DE")
    trials_path, runs_path = write_inputs(folder, trials, pd.read_csv(irt_fixture_dir() / "runs.csv"))
    records = pd.read_csv(model_records(folder / "records.csv", task="vocab")[0], keep_default_na=False)
    records.loc[records["locale"] == "es-CO", "locale"] = "de"
    records.to_csv(folder / "records.csv", index=False)
    english, german_record = vocab_records(folder)
    return {"trials": trials_path, "runs": runs_path, "records": folder / "records.csv", "en": english,
            "de": german_record}


def test_vocab_in_german_uses_the_german_by_language_record(tmp_path: Path, german: dict) -> None:
    assert cli(tmp_path, german, irt=(f"vocab={german['en']}", f"vocab@de={german['de']}")) == 0
    summary = json.loads((tmp_path / "out" / "comparison.json").read_text())
    languages = summary["tasks"]["vocab"]["languages"]
    assert {lang: info["irt_model"] for lang, info in languages.items()} == {"en": "vocab_en", "de": "vocab_de"}
    assert summary["inputs"]["irt"] == ["vocab=vocab_en.csv", "vocab@de=vocab_de.csv"]
    assert list(languages["de"]["models"]) == ["m/de"] and languages["de"]["n_children"] == 150
    items = pd.read_csv(tmp_path / "out" / "items.csv")
    assert sorted(set(items["irt_model"])) == ["vocab_de", "vocab_en"]
    german_item = items[items["irt_model"] == "vocab_de"].set_index("item_uid")["b"]
    english_item = items[items["irt_model"] == "vocab_en"].set_index("item_uid")["b"]
    np.testing.assert_allclose(german_item - english_item.loc[german_item.index], 1.0)  # the German record's b


def test_vocab_in_german_without_its_record_is_one_line(tmp_path: Path, german: dict,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(tmp_path, german, irt=(f"vocab={german['en']}",)) == 2
    err = one_error_line(capsys.readouterr().err)
    assert "vocab: no IRT record for German (Germany) (de) children (vocab is calibrated per language); pass " \
           "--irt vocab@de=PATH (LEVANTE's vocab/by_language/de record)" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("value", "message"), [
    ("vocab@xx={path}", "vocab_de.csv: unknown language 'xx'; accepted: de, en, es, fr, nl"),
    ("vocab@de={path}", "a second IRT model for task 'vocab' for language 'de'"),
    ("vocab@en={path}", "a second IRT model for task 'vocab' (vocab_en)"),
    ("vocab@={path}", "vocab_de.csv: unknown language ''; accepted"),  # an empty qualifier is no English
    ("vocab@de-DE={path}", "a second IRT model for task 'vocab' for language 'de'"),  # a children's tag reads as de
])
def test_bad_language_qualified_irt_is_one_line(tmp_path: Path, german: dict, capsys: pytest.CaptureFixture[str],
                                                value: str, message: str) -> None:
    """An unknown language; two records for one language (vocab@en is vocab's own record, English)."""
    irt = (f"vocab={german['en']}", f"vocab@de={german['de']}", value.format(path=german["de"]))
    assert cli(tmp_path, german, irt=irt) == 2
    err = one_error_line(capsys.readouterr().err)
    assert message in err and str(tmp_path.parent) not in err


# ---------------------------------------------------------------- a model run's locale


def test_locale_of_samples_files_and_records_csv(tmp_path: Path) -> None:
    """lmms-eval samples: the task name's locale (Variant.parse); a records CSV: its `locale` column."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    record = {"item_uid": "trog_a", "task": "trog", "seed": 0, "variant": "original", "output_type": "generate_until",
              "correct": 1}
    for lmms_task in ("levante_trog", "levante_trog_de", "levante_trog_es_co"):
        (run_dir / f"20260101_000000_samples_{lmms_task}.jsonl").write_text(
            json.dumps({"doc_id": 0, "levante_item": record}) + "\n")
    table, _ = read_records(run_dir)
    assert dict(zip(table["model"], table["locale"], strict=True)) == {
        "run/original/gen/seed0": "en", "run/original/gen/seed0/de": "de", "run/original/gen/seed0/es-CO": "es-CO"}
    assert set(table["english_unit"]) == {"run/original/gen/seed0"}
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"task": ["trog"] * 3, "item_uid": ["a", "b", "c"], "correct": [1, 0, 1],
                  "locale": ["de", "", "xx-YY"]}).to_csv(bad, index=False)
    with pytest.raises(Exception, match=r"bad\.csv: row 3: unknown locale 'xx-YY'"):
        read_records(bad)


def test_cross_language_items_of_two_locales_pair_each_with_its_children() -> None:
    """Runs in two translated locales (the same items twice): each locale's rows read the children of English and of
    that locale, one row per (item, locale)."""
    uids = ["i1", "i2"]
    records = pd.DataFrame([{"task": "trog", "item_uid": uid, "control": "original", "english_unit": "m",
                             "locale": code, "correct": float(right)}
                            for code, right in (("en", 1), ("de", 0), ("es-CO", 1)) for uid in uids])
    correct = {"en": [1.0, 1.0], "de": [0.0, 1.0], "es-CO": [1.0, 0.0]}  # per language: i1, i2
    trials = pd.DataFrame({"item_uid": uids * 3, "correct": [c for code in correct for c in correct[code]]})
    languages = np.array([code for code in correct for _ in uids], dtype=object)
    table = cross_language_items(records, trials, languages, min_n=1).set_index(["locale", "item_uid"])
    assert len(table) == 4
    assert table["model_drop"].to_dict() == {("de", "i1"): 1.0, ("de", "i2"): 1.0,
                                             ("es-CO", "i1"): 0.0, ("es-CO", "i2"): 0.0}
    assert table["children_drop"].to_dict() == {("de", "i1"): 1.0, ("de", "i2"): 0.0,
                                                ("es-CO", "i1"): 0.0, ("es-CO", "i2"): 1.0}


def test_a_gap_between_whole_populations_flags_no_item() -> None:
    """Spanish-speaking children 0.6 below the English ones on every item (another site, younger, less able) and a
    model that answers alike in both languages: no item is its own drop, so none is flagged; one item the model
    alone loses is."""
    uids = [f"i{k}" for k in range(6)]
    records = pd.DataFrame([{"task": "trog", "item_uid": uid, "control": "original", "english_unit": "m",
                             "locale": code, "correct": float(not (code == "es-CO" and uid == "i0"))}
                            for code in ("en", "es-CO") for uid in uids])
    p_correct = {"en": 0.9, "es-CO": 0.3}
    rows = [(uid, code, int(k < 10 * p)) for code, p in p_correct.items() for uid in uids for k in range(10)]
    trials = pd.DataFrame(rows, columns=["item_uid", "language", "correct"])
    table = cross_language_items(records, trials, trials["language"].to_numpy(object), min_n=10)
    got = table.set_index("item_uid")
    assert got["children_drop"].to_numpy() == pytest.approx([0.6] * 6)  # raw: every item beyond FLAG_DROP
    assert got["children_drop_centred"].to_numpy() == pytest.approx([0.0] * 6, abs=1e-12)
    assert got.index[got["flagged"]].tolist() == ["i0"]  # 1 - 1/6 after centring; the rest 1/6
