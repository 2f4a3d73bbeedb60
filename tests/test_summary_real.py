"""`summarize` and `verify` on real lmms-eval output (two offline models, two option-order seeds, controls)."""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from summary_runs import accuracy, real_runs, results_file, samples

from levante_tasks.cards.croissant import CardError, check_card
from levante_tasks.cli import main
from levante_tasks.filehash import sha256_file
from levante_tasks.schema.layout import CARD_FILE
from levante_tasks.schema.tasks import task_info
from levante_tasks.summary import stats, summarize_runs
from levante_tasks.testing.lmms_fork import run_cli


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return real_runs(tmp_path_factory)


@pytest.fixture(scope="module")
def summary(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("summary") / "out"
    assert main(["summarize", str(root / "runs" / "fixed"), str(root / "runs" / "oracle"), "--out", str(out)]) == 0
    return out


def cells(out: Path) -> list[dict]:
    return json.loads((out / "matrix.json").read_text(encoding="utf-8"))["cells"]


def cell(out: Path, adapter: str, task: str, variant: str = "original") -> dict:
    found = [c for c in cells(out) if c["adapter"] == adapter and c["task"] == task and c["variant"] == variant]
    assert len(found) == 1, (adapter, task, variant, found)
    return found[0]


def test_outputs_are_written_with_a_schema_version(summary: Path) -> None:
    names = {p.relative_to(summary).as_posix() for p in summary.rglob("*") if p.is_file()}
    assert {"matrix.csv", "matrix.json", "summary.md", "heatmap.png"} <= names
    assert sum(name.endswith("/summary.json") for name in names) == 2  # one per run
    matrix = json.loads((summary / "matrix.json").read_text(encoding="utf-8"))
    assert isinstance(matrix["schema_version"], int)
    assert "wilson" in matrix["methods"]["ci"].lower() and "effective number of items" in matrix["methods"]["ci"]
    assert (summary / "heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cells_match_the_records_and_the_results_file(root: Path, summary: Path) -> None:
    for name, adapter in (("fixed", "levante_fixed"), ("oracle", "levante_image_oracle")):
        folder = root / "runs" / name
        results = json.loads(results_file(folder).read_text(encoding="utf-8"))
        for task in ("levante_vocab_blank", "levante_trog_mc"):
            got = cell(summary, adapter, task.removesuffix("_blank"), "blank" if task.endswith("blank") else "original")
            lines = samples(folder, task)
            assert got["accuracy"] == pytest.approx(accuracy(folder, task))
            assert got["accuracy"] == pytest.approx(results["results"][task]["levante_acc,none"])
            assert got["n_items"] == len(lines) == results["n-samples"][task]["effective"]
            parsed = sum(line["levante_item"]["parse_method"] != "none" for line in lines) / len(lines)
            assert got["parse_rate"] == pytest.approx(parsed)
            k = sum(line["levante_item"]["correct"] for line in lines)
            assert (got["ci95_low"], got["ci95_high"]) == pytest.approx(stats.wilson_interval(k, len(lines)))


def test_two_option_order_seeds_give_mean_sd_and_t_radius(root: Path, summary: Path) -> None:
    folder = root / "runs" / "fixed"
    accs = [accuracy(folder, "levante_vocab"), accuracy(folder, "levante_vocab_seed1")]
    got = cell(summary, "levante_fixed", "levante_vocab")
    assert got["n_replicates"] == 2
    assert got["seed_mean"] == pytest.approx(sum(accs) / 2)
    sd = abs(accs[0] - accs[1]) / math.sqrt(2)
    assert got["seed_sd"] == pytest.approx(sd)
    assert got["seed_ci95_radius"] == pytest.approx(12.7062047 * sd / math.sqrt(2))
    assert got["accuracy"] == pytest.approx(sum(accs) / 2)


def test_visual_control_deltas_follow_the_protocol_signs(root: Path, summary: Path) -> None:
    """visual_dependency_delta = acc - acc_shuffled, blank_image_delta = acc - acc_blank (paired on seed 0)."""
    folder = root / "runs" / "oracle"
    got = cell(summary, "levante_image_oracle", "levante_vocab")
    acc0 = accuracy(folder, "levante_vocab")
    assert acc0 == 1.0  # the oracle reads the option colours: the images carry the answer
    assert got["blank_image_delta"] == pytest.approx(acc0 - accuracy(folder, "levante_vocab_blank"))
    assert got["visual_dependency_delta"] == pytest.approx(acc0 - accuracy(folder, "levante_vocab_shuffled"))
    assert got["blank_image_delta"] > 0.5
    fixed = cell(summary, "levante_fixed", "levante_vocab")
    assert fixed["blank_image_delta"] == pytest.approx(
        accuracy(root / "runs" / "fixed", "levante_vocab") - accuracy(root / "runs" / "fixed", "levante_vocab_blank"))


def test_subtype_metrics_become_subtask_columns(root: Path, summary: Path) -> None:
    """egma-math reports levante_acc_<sub-type>: each is a column under the task, over the lines of that sub-type
    (every line carries every sub-type metric: its correctness under its own sub-type, null under the others)."""
    folder = root / "runs" / "fixed"
    reported = json.loads(results_file(folder).read_text(encoding="utf-8"))["results"]["levante_egma_math"]
    subtypes = [k.split(",")[0].removeprefix("levante_acc_") for k in reported
                if k.startswith("levante_acc_") and "_stderr" not in k]
    assert len(subtypes) >= 2
    lines = samples(folder, "levante_egma_math")
    for sub in subtypes:
        got = cell(summary, "levante_fixed", f"levante_egma_math/{sub}")
        assert got["parent"] == "levante_egma_math" and got["family"] == "egma-math"
        assert got["accuracy"] == pytest.approx(reported[f"levante_acc_{sub},none"])
        assert all(f"levante_acc_{sub}" in line for line in lines)
        assert got["n_items"] == sum(line[f"levante_acc_{sub}"] is not None for line in lines)
    whole = cell(summary, "levante_fixed", "levante_egma_math")
    assert whole["n_items"] == len(lines) and whole["parent"] == ""


def test_rows_carry_model_identity_and_cells_provenance(summary: Path) -> None:
    got = cell(summary, "levante_fixed", "levante_vocab", "blank")
    assert got["model"] and got["revision"] == "unknown"
    prov = got["provenance"]
    for key in ("lmms_eval_version", "lmms_eval_commit", "patch_set_sha256", "task_version", "task_config_sha256",
                "dataset_fingerprint", "seeds", "limit", "budget", "batch_size", "device_class"):
        assert key in prov, key
    assert prov["task_version"] == task_info("vocab").version  # the catalogue's number, as the run recorded it
    assert len(prov["task_config_sha256"]) == 64
    assert prov["dataset_fingerprint"] == "unknown"  # the tasks do not record it yet (see docs/summary.md)
    two_seeds = cell(summary, "levante_fixed", "levante_vocab")["provenance"]
    assert len(two_seeds["task_config_sha256"]) == 2 and two_seeds["option_seeds"] == [0, 1]  # two configs, both
    assert two_seeds["task_version"] == task_info("vocab").version  # one version for both seeds


def test_csv_has_one_row_per_cell(summary: Path) -> None:
    with open(summary / "matrix.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(cells(summary))
    assert {"model", "revision", "task", "variant", "accuracy", "ci95_low", "ci95_high", "parse_rate",
            "visual_dependency_delta", "blank_image_delta", "task_version", "task_config_sha256"} <= set(rows[0])
    assert all(row["task_version"] == str(task_info(row["family"]).version) for row in rows)


def test_report_has_a_table_per_task_family(summary: Path) -> None:
    text = (summary / "summary.md").read_text(encoding="utf-8")
    for family in ("vocab", "egma-math", "trog"):
        assert f"## {family}" in text
    assert "95% CI over items" in text


def test_every_cell_of_the_report_states_its_number_of_replicates(summary: Path) -> None:
    """summary.md names each cell's replicate count, one seed included (vocab has seeds 0 and 1 here)."""
    text = (summary / "summary.md").read_text(encoding="utf-8")
    counts = {c["n_replicates"] for c in cells(summary)}
    assert counts == {1, 2}
    for found in cells(summary):
        k = found["n_replicates"]
        shown = f" n={found['n_items']}, parsed {found['parse_rate']:.0%}, {k} seed{'s sd' if k > 1 else ''}"
        assert shown in text, shown
    assert text.count(", 1 seed") == sum(c["n_replicates"] == 1 for c in cells(summary))


def test_overall_row_pools_every_task_and_test_models_are_marked(summary: Path) -> None:
    """summary.md's overall row = the item-weighted mean accuracy of the model's task columns (original images,
    sub-type columns left out), per output type; both offline test doubles are named as test models, and the fixture
    (not a synth release) is not called synthetic."""
    document = json.loads((summary / "matrix.json").read_text(encoding="utf-8"))
    text = (summary / "summary.md").read_text(encoding="utf-8")
    assert len(document["overall"]) == 4  # two models x two output types
    for row in document["overall"]:
        mine = [c for c in document["cells"] if (c["model"], c["adapter"], c["output_type"]) ==
                (row["model"], row["adapter"], row["output_type"]) and c["variant"] == "original" and not c["parent"]]
        assert row["tasks"] == sorted(c["task"] for c in mine) and mine
        # items are the unit: each task weighs by its items, whatever its number of seeds
        weighted = sum(c["accuracy"] * c["n_items"] for c in mine) / sum(c["n_items"] for c in mine)
        assert row["accuracy"] == pytest.approx(weighted)
        assert row["n_items"] == sum(c["n_items"] for c in mine)
        assert row["ci95_low"] <= row["accuracy"] <= row["ci95_high"] and row["ci95_low"] < row["ci95_high"]
        label = f"{row['model']} @ {row['revision'][:12]} ({row['adapter']})"
        assert f"| {label} | {row['output_type']} | {len(mine)} |" in text
    assert "## Overall" in text
    marks = [line for line in text.splitlines() if line.startswith("> **")]
    assert len(marks) == 1 and "TEST MODELS" in marks[0], marks
    assert all(m["test_model"] for m in document["models"]) and "levante_image_oracle" in marks[0]


def test_outputs_hold_no_absolute_path_host_or_user_name(root: Path, summary: Path) -> None:
    user = os.environ.get("USER") or os.environ.get("LOGNAME") or ""
    for path in summary.rglob("*"):
        if not path.is_file() or path.suffix == ".png":
            continue
        text = path.read_text(encoding="utf-8")
        assert str(root) not in text and "/tmp/" not in text, path
        assert socket.gethostname() not in text, path
        if user and len(user) > 3:
            assert user not in text, path


def test_summarize_messages_hold_no_absolute_path(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["summarize", str(root / "runs" / "fixed"), "--out", str(tmp_path / "out"), "--no-plot"]) == 0
    printed = capsys.readouterr()
    assert "outputs in" in printed.out and str(tmp_path) not in printed.out + printed.err


def test_verify_accepts_an_untouched_run(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["verify", str(root / "runs" / "fixed"), "--skip-installation"])
    out = capsys.readouterr()
    assert status == 0, out.err
    assert "levante_vocab" not in out.err


def test_verify_finds_a_same_size_edit_of_a_reported_metric(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(root / "runs" / "fixed", folder)
    path = results_file(folder)
    text = path.read_text(encoding="utf-8")
    results = json.loads(text)
    value = results["results"]["levante_vocab"]["levante_parse_rate,none"]
    assert value == 1.0
    needle = '"levante_parse_rate,none": 1.0'
    assert text.count(needle) >= 1
    first = text.index(needle, text.index('"levante_vocab": {'))
    path.write_text(text[:first] + '"levante_parse_rate,none": 0.9' + text[first + len(needle):], encoding="utf-8")
    status = main(["verify", str(folder), "--skip-installation"])
    err = capsys.readouterr().err
    assert status == 1
    lines = [line for line in err.splitlines() if "levante_parse_rate" in line]
    assert len(lines) == 1 and "levante_vocab" in lines[0] and "0.9" in lines[0], err


def test_a_builtin_class_on_a_tiny_checkpoint_is_marked_a_test_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tiny_checkpoint: Callable[[str], Path]
) -> None:
    """lmms-eval's own `qwen2_vl` class (its plain-text answers say nothing of the checkpoint) on a random-init
    tiny_models checkpoint: the mark in the checkpoint's config.json makes its row a test model in matrix.json,
    matrix.csv, summary.md and compare's records; without the mark the same run is no test model. The run is
    `python -m lmms_eval`, in a fork of a server that imported it (`lmms_fork`)."""
    from levante_tasks.compare.records import read_records
    from levante_tasks.schema.markers import TEST_MODEL_CONFIG_KEY
    from levante_tasks.testing.fixture_data import write_fixture

    write_fixture(tmp_path / "data")
    # a copy: the shared checkpoint is read only, and this test removes the mark from its config.json
    checkpoint = shutil.copytree(tiny_checkpoint("qwen2_vl"), tmp_path / "tiny-qwen2-vl")
    env = {**os.environ, "LEVANTE_DATA_DIR": str(tmp_path / "data"), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("LEVANTE_DATA_VERSION", None)
    args = ["--model", "qwen2_vl", "--model_args",
               f"pretrained={checkpoint},device_map=cpu,min_pixels=3136,max_pixels=12544", "--force_simple",
               "--tasks", "levante_vocab", "--limit", "2", "--gen_kwargs", "max_new_tokens=2", "--batch_size", "1",
               "--device", "cpu", "--output_path", str(tmp_path / "out"), "--log_samples", "--verbosity", "WARNING"]
    run = run_cli(args, cwd=tmp_path, env=env, timeout=600, entry="lmms_eval")
    assert run.returncode == 0, run.stderr[-3000:]

    def summarized() -> tuple[dict, str, list[dict]]:
        out = tmp_path / "summary"
        assert main(["summarize", str(tmp_path / "out"), "--out", str(out), "--no-plot"]) == 0, capsys.readouterr()
        with (out / "matrix.csv").open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
        return (json.loads((out / "matrix.json").read_text(encoding="utf-8")),
                (out / "summary.md").read_text(encoding="utf-8"), rows)

    document, text, rows = summarized()
    assert [(m["model"], m["adapter"], m["test_model"]) for m in document["models"]] == [
        ("tiny-qwen2-vl", "qwen2_vl", True)]
    assert [line for line in text.splitlines() if line.startswith("> **TEST MODEL")][0].endswith("(qwen2_vl)**")
    assert rows and all(row["test_model"] == "True" for row in rows)
    table, _ = read_records(tmp_path / "out")
    assert len(table) == 2 and table["test_model"].all()

    config = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))
    del config[TEST_MODEL_CONFIG_KEY]
    (checkpoint / "config.json").write_text(json.dumps(config), encoding="utf-8")
    document, text, rows = summarized()
    assert not document["models"][0]["test_model"] and "TEST MODEL" not in text
    assert not read_records(tmp_path / "out")[0]["test_model"].any()


def test_the_results_card_validates_and_points_each_row_to_its_data_card(root: Path, tmp_path: Path) -> None:
    """croissant.json beside matrix.csv: records generated for every cell with a unique key, the data version's
    card named with its sha256, and a changed matrix.csv fails naming it."""
    out = tmp_path / "summary"
    (version,) = [p.name for p in (root / "data").iterdir() if p.is_dir()]  # the version the runs used
    data_card = tmp_path / "data" / version / CARD_FILE  # a card of that version in another data dir
    data_card.parent.mkdir(parents=True)
    data_card.write_text('{"name": "a data card"}', encoding="utf-8")
    document = summarize_runs([root / "runs" / "fixed", root / "runs" / "oracle"], out, plot=False,
                              data_dir=tmp_path / "data")
    assert {c["provenance"]["data_version"] for c in document["cells"]} == {version}
    checked = check_card(out / CARD_FILE)
    assert checked.records == {"results": len(document["cells"]), "data_cards": 1}
    card = json.loads((out / CARD_FILE).read_text(encoding="utf-8"))
    (cards,) = [rs["data"] for rs in card["recordSet"] if rs["@id"] == "data_cards"]
    assert cards == [{"data_cards/data_version": version, "data_cards/card": f"{version}/{CARD_FILE}",
                      "data_cards/sha256": sha256_file(data_card)}]
    (results,) = [rs for rs in card["recordSet"] if rs["@id"] == "results"]
    names = {f["name"] for f in results["field"]}
    assert {"model", "revision", "task_version", "lmms_eval_version", "patch_set_sha256", "data_version"} <= names
    matrix = out / "matrix.csv"
    matrix.write_bytes(matrix.read_bytes().replace(b"levante_vocab", b"levante_vocaB", 1))
    with pytest.raises(CardError, match=r"^matrix\.csv: sha256 differs from croissant\.json"):
        check_card(out / CARD_FILE)
