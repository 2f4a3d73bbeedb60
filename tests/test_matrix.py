"""`levante-tasks matrix`: config validation, cell hashes, dry-run argv, shards, Slurm script, and real lmms-eval
runs on the prepared synthetic release (tiny random-init CLIP and offline doubles): SIGKILL mid-cell then
--resume equals an uninterrupted run, a config change reruns exactly the affected cells, out-of-memory falls
back through the configured batch sizes only, and a failing cell is recorded while the matrix goes on."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from data_helpers import prepared_release
from faults import cli_command, one_error_line, run_cli, tree_snapshot

import levante_tasks
from levante_tasks.cards.croissant import check_card
from levante_tasks.errors import LevanteError
from levante_tasks.filehash import sha256_file
from levante_tasks.matrix.config import load_config
from levante_tasks.matrix.plan import data_facts, datasets_of, plan, plan_sha256, seeded_task
from levante_tasks.matrix.run import plan_document, run_model_cells, select_cells, set_aside_superseded
from levante_tasks.matrix.slurm import cell_script, chunk_models
from levante_tasks.matrix.state import live_runner, process_start, write_state
from levante_tasks.schema.layout import CARD_FILE
from levante_tasks.schema.tasks import TASKS, TaskInfo

DOUBLES = "levante_tasks.testing.forked_doubles"  # matrix_doubles, forked (fork_stream; tests/conftest.py)
DATE = re.compile(r"\d{8}_\d{6}")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory, tiny_checkpoint: Callable[[str], Path]) -> dict[str, Path]:
    """A prepared synthetic release (shared, read only), its children's data, and a tiny random-init CLIP."""
    root = prepared_release(tmp_path_factory)
    return {"root": root, "release": root / "release", "data": root / "data",
            "clip": tiny_checkpoint("clip")}


def write_config(folder: Path, inputs: dict[str, Path], **overrides: Any) -> Path:
    """matrix.yaml in `folder`: a tiny CLIP and a fixed-letter double on levante_trog (limit 4), seed 0."""
    config = {
        "data": {"dir": str(inputs["data"]), "version": "synthetic"},
        "env": {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
        "lmms_eval_module": DOUBLES,
        "models": [{"name": "clip", "model": "levante_clip", "model_args": f"pretrained={inputs['clip']}",
                    "public_id": "tiny-clip"},
                   {"name": "fixed", "model": "levante_fixed", "model_args": "letter=B"}],
        "groups": {"clips": ["clip"], "doubles": ["fixed"]},
        "tasks": ["levante_trog"], "seeds": [0], "limit": 4, "batch_sizes": [4],
        "compare": {"trials": str(inputs["release"] / "children" / "trials.csv"),
                    "runs": str(inputs["release"] / "children" / "runs.csv"),
                    "irt": [str(inputs["release"] / "irt" / "item_params.csv")],
                    "items": str(inputs["data"] / "synthetic" / "datasets"), "n_boot": 20},
        **overrides,
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "matrix.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in config.items() if v is not None}), encoding="utf-8")
    return path


def normal_state(state: dict[str, Any]) -> dict[str, Any]:
    """A state without what differs between identical runs: times, pids and lmms-eval's dated file names."""
    drop = {"started", "finished", "seconds", "pid", "pid_start"}
    out = {k: v for k, v in state.items() if k not in drop}
    out["attempts"] = [{k: v for k, v in a.items() if k != "seconds"} for a in state["attempts"]]
    out["results"] = DATE.sub("DATE", state["results"] or "")
    return out


def matrix_view(out: Path) -> dict[str, Any]:
    """Everything a matrix run produced that must not depend on being interrupted: matrix.json without timing,
    each cell's state and files (dates normalised) and per-item records, and the summary numbers."""
    document = json.loads((out / "matrix.json").read_text(encoding="utf-8"))
    document.pop("timing")
    cells = {}
    for cell in document["cells"]:
        folder = out / cell["dir"]
        files = sorted(DATE.sub("DATE", p.relative_to(folder).as_posix()) for p in folder.rglob("*") if p.is_file())
        records = [json.loads(line)["levante_item"] for p in sorted(folder.rglob("*_samples_*.jsonl"))
                   for line in p.read_text(encoding="utf-8").splitlines()]
        state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
        cells[cell["cell_id"]] = {"files": files, "records": records, "state": normal_state(state)}
    summaries = {}
    for group in document["groups"]:
        summary = json.loads((out / "summary" / group / "matrix.json").read_text(encoding="utf-8"))
        summaries[group] = [(c["model"], c["task"], c["accuracy"], c["n_items"], c["n_responses"])
                            for c in summary["cells"]]
    return {"matrix": document, "cells": cells, "summaries": summaries,
            "top": sorted(p.name for p in out.iterdir() if not p.name.startswith("."))}


@pytest.fixture(scope="module")
def reference(inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted two-cell matrix (with the end step); tests copy it, never change it."""
    folder = tmp_path_factory.mktemp("matrix-reference")
    config = write_config(folder, inputs)
    done = run_cli(["matrix", "--config", config, "--out", folder / "out"], cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


# --- config and plan (no lmms-eval run) ---------------------------------------------------------------------

@pytest.mark.parametrize(("change", "message"), [
    ({"models": None}, "matrix.yaml: models: missing"),
    ({"model": "x"}, "matrix.yaml: model: unknown key"),
    ({"models": [{"name": "a", "model": "m"}, {"name": "a", "model": "n"}], "groups": None},
     "matrix.yaml: models: name 'a' is used twice"),
    ({"batch_sizes": [2, 4]}, "matrix.yaml: batch_sizes: must be distinct and in decreasing order"),
    ({"extra_args": ["--limit", "3"]}, "matrix.yaml: extra_args: --limit is set by the matrix runner"),
    ({"groups": {"clips": ["clip"]}}, "matrix.yaml: groups: model 'fixed' is in no group"),
    ({"groups": {"clips": ["clip", "fixed"], "doubles": ["fixed"]}}, "matrix.yaml: groups.doubles: 'fixed' is "
     "already in group 'clips'"),
    ({"seeds": [0, -1]}, "matrix.yaml: seeds[1]: must be an integer >= 0"),
    ({"limit": 0}, "matrix.yaml: limit: must be a positive number"),
    ({"limit": 2.5}, "matrix.yaml: limit: 2.5 is neither a whole count nor a fraction below 1"),
    ({"models": [{"name": "../x", "model": "m"}], "groups": None}, "matrix.yaml: models[0].name: '../x' is not"),
    ({"compare": {"trials": "nope.csv", "runs": "r.csv", "irt": "i.csv"}}, "matrix.yaml: compare.trials: "),
    ({"models": [{"name": "a", "model": "levante_clip", "model_args": f"pretrained=o/m,revision={'a' * 40}",
                  "revision": "b" * 40}], "groups": None},
     "matrix.yaml: models[0].revision: differs from the revision in model_args"),
    ({"models": [{"name": "a", "model": "levante_clip", "revision": "main"}], "groups": None},
     "matrix.yaml: models[0].revision: must be a 40-character hex commit"),
])
def test_config_problems_are_one_line_naming_file_and_key(inputs: dict[str, Path], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch, change: dict[str, Any],
                                                           message: str) -> None:
    write_config(tmp_path, inputs, **change)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LevanteError) as caught:
        load_config(Path("matrix.yaml"))
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_compare_n_boot_is_positive_as_compare_takes_it(inputs: dict[str, Path], tmp_path: Path) -> None:
    """`compare.n_boot: 0` is refused as `compare --n-boot 0` is (it crashed the end step's age curves)."""
    record = inputs["release"] / "irt" / "item_params.csv"
    with pytest.raises(LevanteError, match=r"compare\.n_boot: must be an integer >= 1$"):
        load_config(write_config(tmp_path, inputs, compare={
            "trials": str(inputs["release"] / "children" / "trials.csv"),
            "runs": str(inputs["release"] / "children" / "runs.csv"), "irt": str(record), "n_boot": 0}))


def test_compare_records_per_language_as_compare_takes_them(inputs: dict[str, Path], tmp_path: Path) -> None:
    """`compare.irt` entries are `PATH` or `TASK[@LANGUAGE]=PATH` (`compare --irt`), `across_languages` a boolean;
    a bad task, language or flag is one line naming the key."""
    record = inputs["release"] / "irt" / "item_params.csv"
    base = {"trials": str(inputs["release"] / "children" / "trials.csv"),
            "runs": str(inputs["release"] / "children" / "runs.csv")}
    config = load_config(write_config(tmp_path, inputs, compare={
        **base, "irt": [f"vocab@de={record}", f"trog={record}", str(record)], "across_languages": True}))
    assert config.compare is not None and config.compare.across_languages
    assert config.compare.irt == (("vocab@de", record), ("trog", record), (None, record))
    for irt, across, message in ((f"vocab@xx={record}", False, "compare.irt[0]: unknown language 'xx'"),
                                 (f"vocabulary={record}", False, "compare.irt[0]: unknown LEVANTE task 'vocabulary'"),
                                 (str(record), "yes please", "compare.across_languages: must be true or false")):
        write_config(tmp_path, inputs, compare={**base, "irt": [irt], "across_languages": across})
        with pytest.raises(LevanteError) as caught:
            load_config(tmp_path / "matrix.yaml")
        assert message in str(caught.value) and "\n" not in str(caught.value)


def test_bad_config_on_the_command_line_exits_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "matrix.yaml").write_text("models: [\n", encoding="utf-8")
    done = run_cli(["matrix", "--config", "matrix.yaml", "--out", "out"], cwd=tmp_path)
    assert done.returncode == 2
    assert one_error_line(done.stderr).startswith("levante-tasks: error: matrix.yaml: invalid YAML at line 2: ")
    assert not (tmp_path / "out").exists()


def test_a_seed_without_an_option_order_variant_is_refused(inputs: dict[str, Path], tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, inputs, tasks=["levante_trog_blank"], seeds=[0, 1]))
    with pytest.raises(LevanteError, match=r"/matrix.yaml: tasks: levante_trog_blank: has no option-order variant "
                                           r"for seed 1"):
        plan(config)


def test_generate_tasks_take_the_order_replicates_up_to_31_and_others_refuse_in_one_line() -> None:
    assert seeded_task("levante_trog", 31) == "levante_trog_seed31" and seeded_task("levante", 17) == "levante_seed17"
    assert seeded_task("levante_trog_mc", 2) == "levante_trog_mc_seed2"
    for task, seed in (("levante_trog_mc", 3), ("levante_mc", 5), ("levante_trog_de", 3), ("levante_trog_blank", 4),
                       ("levante_trog", 32)):
        with pytest.raises(LevanteError) as caught:
            seeded_task(task, seed)
        message = str(caught.value)
        assert message.startswith(f"{task}: has no option-order variant for seed {seed} (option-order seed {seed}")
        assert "order replicates up to 31 for generate_until in English with original images" in message
        assert "\n" not in message


def test_a_task_reads_its_own_dataset_and_a_levante_group_every_one(vocab_extended: TaskInfo) -> None:
    """Names are matched whole: a made-up `levante_vocab_extended` row is not vocab's (nor vocab its)."""
    assert datasets_of("levante_vocab_extended_mc_seed1") == ["vocab-extended"]
    assert datasets_of("levante_vocab_blank") == datasets_of("levante_vocab_mc_seeds") == ["vocab"]
    assert datasets_of("levante_mc_seed2") == [*(info.name for info in TASKS), "vocab-extended"]
    assert datasets_of("levante_vocabulary") == datasets_of("l0_trace") == datasets_of("mmstar") == []


def test_a_locale_task_is_hashed_with_its_locale_dataset(inputs: dict[str, Path], tmp_path: Path) -> None:
    """A rebuilt German trog dataset (a corrected translation table) reruns levante_trog_de on --resume, and only it."""
    assert datasets_of("levante_trog_de_mc") == ["trog@de"] and datasets_of("levante_trog") == ["trog"]
    assert datasets_of("levante_es_co") == [f"{info.name}@es-CO" for info in TASKS]
    config = load_config(write_config(tmp_path, inputs, tasks=["levante_trog", "levante_trog_de"], seeds=[0]))
    data = data_facts(config)
    base = {c.task: c.sha256 for c in plan(config, data)}
    data["fingerprints"] = {**data["fingerprints"], "trog@de": "0" * 64}
    rebuilt = {c.task: c.sha256 for c in plan(config, data)}
    assert rebuilt["levante_trog"] == base["levante_trog"] and rebuilt["levante_trog_de"] != base["levante_trog_de"]


def test_hashes_are_stable_and_change_exactly_for_the_affected_cells(inputs: dict[str, Path],
                                                                      tmp_path: Path) -> None:
    def hashes(**change: Any) -> dict[tuple[str, str, int], str]:
        config = load_config(write_config(tmp_path, inputs, **{"tasks": ["levante_trog", "levante_vocab"],
                                                                "seeds": [0, 1], **change}))
        return {(c.model.name, c.task, c.seed): c.sha256 for c in plan(config)}

    base = hashes()
    assert len(base) == 8 and len(set(base.values())) == 8
    assert hashes() == base
    changed = hashes(models=[{"name": "clip", "model": "levante_clip", "model_args": f"pretrained={inputs['clip']}",
                              "public_id": "tiny-clip"},
                             {"name": "fixed", "model": "levante_fixed", "model_args": "letter=C"}])
    assert {k for k in base if base[k] != changed[k]} == {k for k in base if k[0] == "fixed"}
    assert hashes(batch_sizes=[8, 4, 1]) == base  # the out-of-memory fallback list never invalidates a cell
    assert all(base[k] != v for k, v in hashes(limit=5).items())
    more = hashes(seeds=[0, 1, 2])
    assert {k: more[k] for k in base} == base and len(more) == 12

    config = load_config(write_config(tmp_path, inputs, tasks=["levante_trog", "levante_vocab"], seeds=[0, 1]))
    data = data_facts(config)
    data["fingerprints"] = {**data["fingerprints"], "trog": "0" * 64}  # trog's dataset was rebuilt
    rebuilt = {(c.model.name, c.task, c.seed): c.sha256 for c in plan(config, data)}
    assert {k for k in base if base[k] != rebuilt[k]} == {k for k in base if k[1] == "levante_trog"}


def test_dry_run_prints_the_argv_of_each_cell_and_writes_nothing(inputs: dict[str, Path], tmp_path: Path) -> None:
    config = write_config(tmp_path, inputs, seeds=[0, 1], device="cuda:0", num_processes=2,
                          lmms_eval_module="lmms_eval", extra_args=["--verbosity", "INFO"])
    done = run_cli(["matrix", "--config", config, "--out", tmp_path / "out", "--dry-run"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [shlex.split(line) for line in done.stdout.splitlines() if not line.startswith("#")]
    assert all(words[:3] == ["cd", str(tmp_path), "&&"] and words[3] == "env" for words in lines)
    commands = [words[words.index(sys.executable):] for words in lines]
    headers = [line for line in done.stdout.splitlines() if line.startswith("#")]
    assert len(commands) == 4 and all("(to run)" in h for h in headers)
    seed1 = commands[1]  # clip, seed 1
    assert seed1[:8] == [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2", "-m",
                         "lmms_eval", "--model"]
    flags = {name: seed1[seed1.index(name) + 1] for name in ("--model", "--model_args", "--tasks", "--seed",
                                                              "--limit", "--device", "--batch_size")}
    assert flags["--model"] == "levante_clip" and flags["--model_args"] == f"pretrained={inputs['clip']}"
    assert flags["--tasks"] == "levante_trog_seed1" and flags["--seed"] == "1,1235,1235,1235"
    assert flags["--limit"] == "4" and flags["--device"] == "cuda:0" and flags["--batch_size"] == "4"
    assert "--log_samples" in seed1 and seed1[-2:] == ["--verbosity", "INFO"]
    assert commands[0][commands[0].index("--tasks") + 1] == "levante_trog"
    assert not (tmp_path / "out").exists()


def test_the_example_config_plans_models_x_tasks_x_seeds_in_groups() -> None:
    config = load_config(Path(__file__).resolve().parents[1] / "examples" / "matrix.yaml")
    cells = plan(config)
    assert len(cells) == 9 and config.data_version == "2026-03-24" and config.batch_sizes == (32, 16, 8, 1)
    assert [c.lmms_task for c in cells[:3]] == ["levante", "levante_seed1", "levante_seed2"]
    assert {c.model.group for c in cells} == {"contrastive", "generative"}
    assert cells[-1].rel_dir.startswith("cells/generative/smolvlm-256m__levante__s2__")


def test_shards_partition_the_cells(inputs: dict[str, Path], tmp_path: Path) -> None:
    cells = plan(load_config(write_config(tmp_path, inputs, tasks=["levante_trog", "levante_vocab"],
                                          seeds=[0, 1, 2])))
    for n in range(1, 6):
        shards = [select_cells(cells, (i, n), None) for i in range(n)]
        ids = [c.cell_id for shard in shards for c in shard]
        assert sorted(ids) == sorted(c.cell_id for c in cells) and len(set(ids)) == len(cells)
    assert select_cells(cells, None, 3) == [cells[3]]
    with pytest.raises(LevanteError, match="--cell 12: the matrix has cells 0..11"):
        select_cells(cells, None, 12)


def test_out_must_be_a_matrix_and_an_earlier_one_needs_resume(inputs: dict[str, Path], tmp_path: Path) -> None:
    config = write_config(tmp_path, inputs)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me", encoding="utf-8")
    done = run_cli(["matrix", "--config", config, "--out", mine], cwd=tmp_path)
    assert done.returncode == 2 and "mine: not empty and holds no matrix-plan.json" in one_error_line(done.stderr)
    assert tree_snapshot(mine) == {"notes.txt": b"keep me"}
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "matrix-plan.json").write_text("{}", encoding="utf-8")
    done = run_cli(["matrix", "--config", config, "--out", earlier], cwd=tmp_path)
    assert done.returncode == 2 and "earlier: holds an earlier matrix; pass --resume" in one_error_line(done.stderr)


def test_superseded_cells_are_set_aside_and_a_regrouped_cell_is_moved(inputs: dict[str, Path],
                                                                        tmp_path: Path) -> None:
    cells = plan(load_config(write_config(tmp_path, inputs)))  # clip in group clips, fixed in doubles
    out = tmp_path / "out"
    old = out / "cells" / "doubles" / "fixed__levante_trog__s0__000000000000"  # an earlier config's cell
    regrouped = out / "cells" / "all" / cells[0].cell_id  # clip's cell, from when it was in group `all`
    for folder in (old, regrouped):
        folder.mkdir(parents=True)
        (folder / "state.json").write_text("{}", encoding="utf-8")
    assert set_aside_superseded(out, cells) == [old.relative_to(out).as_posix()]
    assert (out / "superseded" / "doubles" / old.name / "state.json").is_file() and not old.exists()
    assert (out / cells[0].rel_dir / "state.json").is_file() and not regrouped.exists()


def test_a_cell_whose_lmms_eval_process_is_alive_is_not_run_twice(inputs: dict[str, Path], tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, inputs))
    cell = plan(config)[0]
    folder = tmp_path / "out" / cell.rel_dir
    folder.mkdir(parents=True)
    write_state(folder, {"status": "running", "pid": os.getpid(), "pid_start": process_start(os.getpid())})
    with pytest.raises(LevanteError, match=rf"{cell.rel_dir}: still being run by process {os.getpid()}"):
        run_model_cells(config, [cell], tmp_path / "out", data_facts(config))
    write_state(folder, {"status": "running", "pid": os.getpid(), "pid_start": "1"})  # the pid was reused
    assert live_runner(folder) is None


# --- real lmms-eval runs --------------------------------------------------------------------------------------

def test_uninterrupted_matrix_writes_cells_summaries_comparisons_and_report(reference: Path) -> None:
    out = reference / "out"
    document = json.loads((out / "matrix.json").read_text(encoding="utf-8"))
    assert [(c["model"], c["status"], c["batch_size"]) for c in document["cells"]] == [("clip", "done", 4),
                                                                                       ("fixed", "done", 4)]
    for group, model in (("clips", "tiny-clip"), ("doubles", "levante_fixed[letter=B]")):
        entry = document["groups"][group]
        assert entry["summary"] == f"summary/{group}/summary.md" and entry["problems"] == []
        assert entry["comparison"] == f"comparison/{group}/comparison.md"
        summary = json.loads((out / "summary" / group / "matrix.json").read_text(encoding="utf-8"))
        assert {c["model"] for c in summary["cells"]} == {model}  # a group's summary holds only its models
        assert (out / "comparison" / group / "comparison.json").is_file()
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "[summary](summary/clips/summary.md)" in report
    # the report names each model with the summary's label (runs.model.model_label), one name everywhere
    assert "| tiny-clip @ unknown (levante_clip) | levante_trog | 0 | done | 4 |" in report
    assert document["cells"][1]["model_label"] == "levante_fixed[letter=B] @ unknown (levante_fixed)"
    assert "TEST MODEL (random-init" in report  # both groups hold test models
    runner_paths = (str(reference), str(Path(levante_tasks.__file__).resolve().parents[1]))
    leaks = [p.name for p in out.rglob("*") if p.is_file()
             and any(path in p.read_text(encoding="utf-8", errors="replace") for path in runner_paths)]
    assert leaks == []  # no output names where it was written or where the package is (lmms-eval records its argv)
    logs = [p.read_text(encoding="utf-8") for p in out.rglob("cell.log")]
    assert len(logs) == 2 and not any("\x1b[" in log or "it/s]" in log for log in logs)  # no colours, no bars
    argv = json.loads(next(out.rglob("*_results.json")).read_text(encoding="utf-8"))["config"]["resolved_cli_args"]
    assert argv["output_path"].startswith("out/cells/") and argv.get("include_path") is None


def test_the_matrix_results_card_validates_and_points_to_its_data_card(inputs: dict[str, Path],
                                                                       reference: Path) -> None:
    """croissant.json beside matrix.json: each group's summary rows as records with unique keys, every listed
    file's sha256 (the summaries' and comparisons' cards among them), and the data version's card by sha256."""
    out = reference / "out"
    checked = check_card(out / CARD_FILE)
    assert checked.records == {"results_clips": 1, "results_doubles": 1, "data_cards": 1}
    card = json.loads((out / CARD_FILE).read_text(encoding="utf-8"))
    listed = {node["contentUrl"] for node in card["distribution"]}
    assert {f"{kind}/{group}/{CARD_FILE}" for kind in ("summary", "comparison") for group in ("clips", "doubles")
            } | {"matrix.json", "summary/clips/matrix.csv", "summary/doubles/matrix.csv"} == listed
    (cards,) = [rs["data"] for rs in card["recordSet"] if rs["@id"] == "data_cards"]
    assert cards == [{"data_cards/data_version": "synthetic", "data_cards/card": f"synthetic/{CARD_FILE}",
                      "data_cards/sha256": sha256_file(inputs["data"] / "synthetic" / CARD_FILE)}]
    for group in ("clips", "doubles"):  # each group's summary has its own results card
        assert check_card(out / "summary" / group / CARD_FILE).records["results"] == 1


def test_sigkill_mid_cell_then_resume_equals_an_uninterrupted_run(inputs: dict[str, Path], reference: Path,
                                                                   tmp_path: Path) -> None:
    config = write_config(tmp_path, inputs)
    out = tmp_path / "out"
    args = ["matrix", "--config", config, "--out", out]
    process = subprocess.Popen(cli_command(args), cwd=tmp_path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    second = out / "cells" / "doubles"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            states = list(second.glob("*/state.json"))
            if states and json.loads(states[0].read_text(encoding="utf-8") or "{}").get("status") == "running":
                break  # the second cell has started (its lmms-eval run, forked, may finish within a second)
            assert process.poll() is None, "the matrix finished before the kill point"
            time.sleep(0.05)
        else:
            pytest.fail("the second cell never started")
        os.killpg(process.pid, signal.SIGKILL)  # the runner and its lmms-eval child, as a lost node would
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    killed = second / states[0].parent.name
    assert json.loads((killed / "state.json").read_text(encoding="utf-8"))["status"] == "running"
    assert not (out / "report.md").exists()
    partial = killed / "lmms" / "20260101_000000_results.json"  # what a kill during lmms-eval's writes leaves
    partial.parent.mkdir(parents=True, exist_ok=True)
    partial.write_text('{"results": {', encoding="utf-8")
    first_state = next((out / "cells" / "clips").glob("*/state.json"))
    first_mtime = first_state.stat().st_mtime_ns

    done = run_cli([*args, "--resume"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[1/2] clip__levante_trog__s0__" in done.stdout and "kept (finished earlier)" in done.stdout
    assert first_state.stat().st_mtime_ns == first_mtime  # the finished cell was not run again
    assert not partial.exists()
    assert matrix_view(out) == matrix_view(reference / "out")


def counted_config(folder: Path, inputs: dict[str, Path]) -> Path:
    """matrix.yaml: one model (`levante_counted`: each construction appends a line to builds.txt) x 2 tasks x
    2 seeds, limit 2."""
    return write_config(folder, inputs, groups=None, compare=None, limit=2, seeds=[0, 1],
                        tasks=["levante_trog", "levante_vocab"],
                        models=[{"name": "counted", "model": "levante_counted",
                                 "model_args": "letter=B,builds=builds.txt"}])


def test_a_models_cells_share_one_process_and_one_model_load(inputs: dict[str, Path], tmp_path: Path) -> None:
    """2 tasks x 2 seeds of one model: one lmms-eval process (a --config list), the model built once (patch 0019),
    each run's output in its own cell, the loads in matrix.json and the report."""
    config = counted_config(tmp_path, inputs)
    done = run_cli(["matrix", "--config", config, "--out", tmp_path / "out"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len((tmp_path / "builds.txt").read_text(encoding="utf-8").splitlines()) == 1  # __init__ ran once
    document = json.loads((tmp_path / "out" / "matrix.json").read_text(encoding="utf-8"))
    assert [(c["task"], c["seed"], c["status"]) for c in document["cells"]] == [
        ("levante_trog", 0, "done"), ("levante_trog", 1, "done"), ("levante_vocab", 0, "done"),
        ("levante_vocab", 1, "done")]
    assert document["model_loads"] == {"per_model": {"counted": 1}, "total": 1}
    assert [a["model_load"] for c in document["cells"] for a in c["attempts"]] == [True, False, False, False]
    assert "Model loads: 1 (counted 1)." in (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    for cell in document["cells"]:  # each cell holds its own run's results and only its run's log
        folder = tmp_path / "out" / cell["dir"]
        results = json.loads(next(folder.rglob("*_results.json")).read_text(encoding="utf-8"))
        assert cell["lmms_task"] in results["results"]
        log = (folder / "cell.log").read_text(encoding="utf-8")
        assert log.count("Evaluation tracker args") == 1 and f"{cell['dir']}/lmms" in log
    assert not list((tmp_path / "out").glob(".runs-*"))  # the process's runs file is removed


def test_a_kill_midway_keeps_the_finished_runs_and_a_rerun_runs_only_the_missing_ones(
        inputs: dict[str, Path], tmp_path: Path) -> None:
    config = counted_config(tmp_path, inputs)
    out = tmp_path / "out"
    args = ["matrix", "--config", config, "--out", out]
    process = subprocess.Popen(cli_command(args), cwd=tmp_path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)

    def done_cells() -> list[Path]:
        return [p.parent for p in out.glob("cells/all/*/state.json")
                if json.loads(p.read_text(encoding="utf-8") or "{}").get("status") == "done"]

    deadline = time.monotonic() + 300
    try:
        while len(done_cells()) < 2:
            assert process.poll() is None, "the matrix finished before the kill point"
            assert time.monotonic() < deadline, "two runs never finished"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)  # the runner and its lmms-eval, as a lost node would
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    kept = {folder.name: tree_snapshot(folder) for folder in done_cells()}
    assert len(kept) in (2, 3) and not (out / "report.md").exists()
    done = run_cli([*args, "--resume"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("kept (finished earlier)") == len(kept)
    assert {name: tree_snapshot(out / "cells" / "all" / name) for name in kept} == kept  # byte-identical
    document = json.loads((out / "matrix.json").read_text(encoding="utf-8"))
    assert [c["status"] for c in document["cells"]] == ["done"] * 4
    rerun = [c for c in document["cells"] if Path(c["dir"]).name not in kept]
    assert [a["model_load"] for c in rerun for a in c["attempts"]] == [True] + [False] * (len(rerun) - 1)
    assert document["model_loads"]["total"] == 2  # one per process
    assert len((tmp_path / "builds.txt").read_text(encoding="utf-8").splitlines()) == 2


def test_a_config_change_reruns_exactly_the_affected_cells(inputs: dict[str, Path], reference: Path,
                                                            tmp_path: Path) -> None:
    shutil.copytree(reference / "out", tmp_path / "out")
    before = json.loads((tmp_path / "out" / "matrix.json").read_text(encoding="utf-8"))
    clip_dir, fixed_dir = (tmp_path / "out" / c["dir"] for c in before["cells"])
    clip_mtime = (clip_dir / "state.json").stat().st_mtime_ns
    models = [{"name": "clip", "model": "levante_clip", "model_args": f"pretrained={inputs['clip']}",
               "public_id": "tiny-clip"}, {"name": "fixed", "model": "levante_fixed", "model_args": "letter=C"}]
    config = write_config(tmp_path, inputs, models=models)
    refused = run_cli(["matrix", "--config", config, "--out", tmp_path / "out"], cwd=tmp_path)
    assert refused.returncode == 2 and "pass --resume" in refused.stderr
    done = run_cli(["matrix", "--config", config, "--out", tmp_path / "out", "--resume"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    after = json.loads((tmp_path / "out" / "matrix.json").read_text(encoding="utf-8"))
    assert after["cells"][0] == before["cells"][0]  # the clip cell: same hash, same folder, kept
    assert (clip_dir / "state.json").stat().st_mtime_ns == clip_mtime
    assert after["cells"][1]["sha256"] != before["cells"][1]["sha256"] and after["cells"][1]["status"] == "done"
    assert not fixed_dir.exists() and (tmp_path / "out" / "superseded" / "doubles" / fixed_dir.name).is_dir()
    assert f"superseded (config changed): cells/doubles/{fixed_dir.name}" in done.stdout
    summary = json.loads((tmp_path / "out" / "summary" / "doubles" / "matrix.json").read_text(encoding="utf-8"))
    assert [c["model"] for c in summary["cells"]] == ["levante_fixed[letter=C]"]  # the old output is not reused


def test_batch_above_one_for_a_class_patch_0015_fixes_is_refused_while_that_patch_is_not_in_effect(
        inputs: dict[str, Path], tmp_path: Path) -> None:
    """Issue 31: unpatched, `qwen2_vl` at `batch_sizes: [4, 1]` on `levante` sends a quarter of the items another
    task's pictures and the cell reports done; the plan refuses it before any cell runs, naming the model."""
    def config(models: list[dict[str, str]], batch_sizes: list[int]):
        return load_config(write_config(tmp_path, inputs, models=models, groups=None, compare=None,
                                        tasks=["levante"], batch_sizes=batch_sizes))

    qwen = [{"name": "qwen", "model": "qwen2_vl", "model_args": "pretrained=some/checkpoint"}]
    lmms = {"version": "0.7.2", "commit": "c", "patch_set_sha256": "p"}
    unpatched = {"lmms_eval": {**lmms, "patched": False}, "levante_tasks": "test"}
    patched = {"lmms_eval": {**lmms, "patched": True}, "levante_tasks": "test"}
    with pytest.raises(LevanteError, match=r"models: qwen: `qwen2_vl` at batch_sizes \[4, 1\] needs lmms-eval patch "
                                           r"0015, which is not in effect .*`levante-tasks lmms-eval patch`"):
        plan(config(qwen, [4, 1]), software=unpatched)
    assert [c.lmms_task for c in plan(config(qwen, [4, 1]), software=patched)] == ["levante"]
    assert len(plan(config(qwen, [1]), software=unpatched)) == 1  # one item per batch: nothing to mix up
    clip = [{"name": "clip", "model": "levante_clip", "model_args": f"pretrained={inputs['clip']}"}]
    assert len(plan(config(clip, [4, 1]), software=unpatched)) == 1  # our adapters read each item's own task


def test_out_of_memory_falls_back_through_configured_sizes_and_a_failure_is_recorded(
        inputs: dict[str, Path], tmp_path: Path) -> None:
    models = [{"name": "oom", "model": "levante_oom", "model_args": "max_batch=2"},
              {"name": "oom-always", "model": "levante_oom", "model_args": "max_batch=1"},
              {"name": "crash", "model": "levante_crash"}]
    config = write_config(tmp_path, inputs, models=models, groups=None, compare=None, limit=3, batch_sizes=[8, 2])
    done = run_cli(["matrix", "--config", config, "--out", tmp_path / "out"], cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads((tmp_path / "out" / "matrix.json").read_text(encoding="utf-8"))
    cells = {c["model"]: c for c in document["cells"]}
    assert [(a["batch_size"], a["outcome"]) for a in cells["oom"]["attempts"]] == [(8, "oom"), (2, "done")]
    assert cells["oom"]["status"] == "done" and cells["oom"]["batch_size"] == 2 and cells["oom"]["oom_fallback"]
    assert [(a["batch_size"], a["outcome"]) for a in cells["oom-always"]["attempts"]] == [(8, "oom"), (2, "oom")]
    assert cells["oom-always"]["error"]["reason"] == "out of memory at every configured batch size (8, 2)"
    crash = cells["crash"]
    assert crash["status"] == "failed" and [a["outcome"] for a in crash["attempts"]] == ["failed"]
    assert "RuntimeError: test double: the model is broken" in crash["error"]["tail"]
    assert not any(line.startswith("/") or str(tmp_path) in line for line in crash["error"]["tail"])
    assert not (tmp_path / "out" / crash["dir"] / "lmms").exists()  # no partial output for the summary to meet
    assert "test double: the model is broken" in (tmp_path / "out" / crash["dir"] / "cell.log").read_text()
    summary = json.loads((tmp_path / "out" / "summary" / "all" / "matrix.json").read_text(encoding="utf-8"))
    assert [c["model"] for c in summary["cells"]] == ["levante_oom[max_batch=2]"]
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert ("| levante_oom[max_batch=2] @ unknown (levante_oom) | levante_trog | 0 | done (oom fallback) | 2 | "
            "8:oom -> 2:done |") in report
    assert "| crash (not summarized) | levante_trog |" in report  # a failed cell has no summary label
    assert "### crash__levante_trog__s0__" in report
    assert crash["error"]["reason"].endswith(", no results file that parses: RuntimeError: test double: the model is "
                                             "broken")
    assert f"levante-tasks: error: {crash['cell_id']}: lmms-eval exit" in done.stderr


def test_the_cell_script_runs_the_model_offset_plus_task_id_from_any_folder_with_an_empty_environment(
        inputs: dict[str, Path], tmp_path: Path) -> None:
    """What --export=NONE gives a job: no PATH, no venv, another working folder; the script sets them."""
    config = load_config(write_config(tmp_path, inputs, compare=None, limit=3, groups=None,
                                      models=[{"name": "a", "model": "levante_fixed", "model_args": "letter=A"},
                                              {"name": "b", "model": "levante_fixed", "model_args": "letter=B"}]))
    cells = plan(config)
    out = tmp_path / "out"
    (out / "slurm" / "logs").mkdir(parents=True)  # what --submit writes before it submits
    (out / "matrix-plan.json").write_text(json.dumps(plan_document(config, cells)), encoding="utf-8")
    script = tmp_path / "cells.sbatch"
    script.write_text(cell_script(config, out, plan_sha256(cells)), encoding="utf-8")
    task = subprocess.run(["/usr/bin/env", "-i", "SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_JOB_ID=7", "/bin/bash",
                           str(script), "1"], cwd="/", capture_output=True, text=True, timeout=300, check=False)
    assert task.returncode == 0, task.stdout + task.stderr
    states = {p.parent.name.split("__")[0]: json.loads(p.read_text(encoding="utf-8"))
              for p in (out / "cells").rglob("state.json")}
    assert list(states) == ["b"] and states["b"]["status"] == "done"  # offset 1 + task 0 = model 1 only
    log = (out / "slurm" / "logs" / "model-1.log").read_text(encoding="utf-8")
    assert log.startswith("=== model 1: job 7_0, restart 0, ") and f"{cells[1].cell_id}: done" in log
    assert not (out / "report.md").exists()  # the end step is its own job


def test_arrays_split_at_max_array_size_and_where_resources_change(inputs: dict[str, Path], tmp_path: Path) -> None:
    models = [{"name": n, "model": "levante_fixed", "model_args": f"letter={n.upper()}"} for n in "abc"]
    config = load_config(write_config(tmp_path, inputs, models=models, groups=None, seeds=[0, 1], device="cuda:0",
                                      slurm={"partition": "gpu", "throttle": 4, "options": ["--constraint=a100"],
                                             "models": {"c": {"gres": "gpu:2", "time": "08:00:00"}},
                                             "end_step": {"partition": "cpu", "gres": "none"}}))
    cells = plan(config)
    chunks = chunk_models(config, [c for c in cells if c.index != 1], 3, "m1")  # cell 1 finished earlier
    assert [(c.offset, c.indices, c.models, c.array_spec()) for c in chunks] == [  # one task per model, each its
        (0, (0,), ("a",), "0%4"), (1, (1,), ("b",), "0%4"), (2, (2,), ("c",), "0%4")]  # own job name: own array
    shared = load_config(write_config(tmp_path, inputs, models=models, groups=None, seeds=[0, 1],
                                      slurm={"job_name": "grid", "models": {"c": {"time": "08:00:00"}}}))
    assert [(c.offset, c.indices, c.models) for c in chunk_models(shared, cells, 3, "m1")] == [
        (0, (0, 1), ("a", "b")), (2, (2,), ("c",))]  # a and b share their resources: one array, a task each
    assert chunk_models(shared, cells[2:4], 3, "m1")[0].indices == (1,)  # model b alone: its index in the config
    four_models = dict(models=[{"name": n, "model": "levante_fixed", "model_args": f"letter={n.upper()}"}
                                for n in "abcd"],
                       groups=None, slurm={"job_name": "grid"})
    four = load_config(write_config(tmp_path, inputs, **four_models))
    assert [c.indices for c in chunk_models(four, plan(four), 2, "m1")] == [(0, 1), (2, 3)]  # below MaxArraySize 2
    assert chunks[0].resources.sbatch_args() == ["--partition=gpu", "--gres=gpu:1", "--job-name=m1-a",
                                                 "--constraint=a100"]
    assert chunks[2].resources.sbatch_args() == ["--partition=gpu", "--gres=gpu:2", "--time=08:00:00",
                                                 "--job-name=m1-c", "--constraint=a100"]
    assert config.slurm.for_end_step().sbatch_args() == ["--partition=cpu", "--gres=none"]
    # the end step runs no cell: no GPU of its own on a CUDA matrix, not the defaults' gres or options either
    plain = load_config(write_config(tmp_path, inputs, models=models, groups=None, device="cuda:0",
                                     slurm={"partition": "gpu", "gres": "gpu:1", "time": "04:00:00",
                                            "options": ["--constraint=a100"], "end_step": {"options": ["--x=1"]}}))
    assert plain.slurm.for_end_step().sbatch_args() == ["--partition=gpu", "--time=04:00:00", "--x=1"]
    one = chunk_models(config, cells[:4], 1, "m1")  # MaxArraySize 1: one task per array
    assert [(c.offset, c.array_spec()) for c in one] == [(0, "0%4"), (1, "0%4")]
    with pytest.raises(LevanteError, match=r"matrix.yaml: slurm.models: 'z' is not a model name"):
        load_config(write_config(tmp_path, inputs, slurm={"models": {"z": {"time": "1:00"}}}))
    with pytest.raises(LevanteError, match=r"matrix.yaml: slurm.options: --array, --dependency"):
        load_config(write_config(tmp_path, inputs, slurm={"options": ["--array=0-3"]}))


def test_a_models_revision_pins_what_our_adapters_load(inputs: dict[str, Path], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`revision` reaches our adapters as `revision=` in model_args (they then load that commit); a revision only
    in model_args is recorded as the model's revision; other models keep their model_args as written."""
    commit = "c" * 40
    models = [{"name": "pinned", "model": "levante_clip", "model_args": "pretrained=org/m", "revision": commit},
              {"name": "inline", "model": "levante_vlm_mc", "model_args": {"pretrained": "org/v", "revision": commit}},
              {"name": "other", "model": "levante_fixed", "model_args": "letter=B", "revision": commit}]
    write_config(tmp_path, inputs, models=models, groups=None)
    monkeypatch.chdir(tmp_path)
    pinned, inline, other = load_config(Path("matrix.yaml")).models
    assert pinned.model_args == f"pretrained=org/m,revision={commit}" and pinned.revision == commit
    assert inline.model_args == f"pretrained=org/v,revision={commit}" and inline.revision == commit
    assert other.model_args == "letter=B" and other.revision == commit


def test_a_failure_reason_is_the_last_exception_line_else_a_failed_process_s_last_line() -> None:
    """A traceback's exception line wins; a SystemExit's one-line message (our refusals: RunStopped, patch 0013)
    has no exception name, so a failed process's last line is the cause, its absolute paths shortened; a process
    that exited 0 (or an unknown status) has no such cause."""
    from levante_tasks.matrix.state import error_line

    traceback = "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad model\nsummary line\n"
    assert error_line(traceback, 1) == error_line(traceback) == "ValueError: bad model"
    refusal = ("loading model\nmodel class Qwen2_VL cannot run the _mc variants (no loglikelihood): use --model "
               "levante_vlm_mc or levante_clip, or Qwen2_VL on the generation variants (levante_vocab); refused: "
               "levante_vocab_mc\n")
    assert error_line(refusal, 1).startswith("model class Qwen2_VL cannot run the _mc variants (no loglikelihood)")
    assert error_line(refusal, 0) is None and error_line(refusal) is None
    stopped = "levante_trog: /home/someone/data/x.parquet: corrupt\n"
    assert error_line(stopped, 1) == "levante_trog: .../data/x.parquet: corrupt"
    assert error_line("\n\n", 1) is None
