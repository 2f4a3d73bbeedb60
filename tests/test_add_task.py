"""Adding a picture-option task is one new folder plus one registry line (issue 28's "done when"; docs/new_task.md).

In a scratch copy of the repository's files, a made-up task `picture-probe` gets a folder of four short declarative
files (its row, `ItemRules()`, the generic picture-choice builder, a default `FixtureSpec()`) and one line in the
registry; the generator then writes its YAMLs, README, docs row and item counts (counted from a synthetic release,
which holds the task through its builder). The registry-driven tests that broke when an eighth task was added by
hand (checklist, YAML tree, synthetic manifest, golden units, real-sample runs) run against the copy in a
subprocess and pass. Without the registry line, or with a piece of the folder missing, the checklist tests fail
naming what is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from shared_paths import REPO_ROOT, shared_dir

FOLDER = "picture_probe"
PIECES = {
    "__init__.py": '''"""A made-up picture-option task (tests/test_add_task.py)."""

from levante_tasks.schema.task_info import TaskInfo

TASK = TaskInfo("picture-probe", "pprobe", "levante_picture_probe", image_options=True,
                measures="A made-up task: the child picks the picture a coloured shape's name names.")
''',
    "items.py": "from levante_tasks.data.rules import ItemRules\n\nRULES = ItemRules()\n",
    "synth.py": ("from levante_tasks.synth.picture_choice import picture_choice\nfrom levante_tasks.synth.task import "
                 "SynthTask\n\nSYNTH = SynthTask(picture_choice(\"picture-probe\"))\n"),
    "fixture.py": "from levante_tasks.testing.fixture_spec import FixtureSpec\n\nSPEC = FixtureSpec()\n",
}
REGENERATE = """
import sys, tempfile
from pathlib import Path
from levante_tasks.lmms import generate as generator
from levante_tasks.synth import write_synthetic_release
with tempfile.TemporaryDirectory() as out:
    write_synthetic_release(Path(out), seed=0, version="synthetic")
    generator.refresh_counts(Path(out) / "synthetic" / "manifest.csv", only=("picture-probe",))
sys.exit(generator.main([]))
"""
# The tests that broke when an eighth task was added by hand, as node ids: every test of the checklist, the YAML
# tree's checks, the synthetic manifest's trial types and strict prepare, the golden units (the unit check and one
# model's full run: the other three models run the same suites) and one real-sample run (levante_mc and the tiny
# CLIP run the same `levante` groups; left out for time). The rest of the suite (demo, matrix, summaries) runs the
# same registry-driven code on more data; the closing note of issue 28 records one whole-suite run of the copy.
REGISTRY_TESTS = [
    "tests/test_new_task.py",
    "tests/test_tasks.py::test_yaml_tree_is_generated_and_in_sync",
    "tests/test_tasks.py::test_yaml_tree_is_thin",
    "tests/test_tasks.py::test_each_yaml_carries_its_catalogue_task_version_as_lmms_evals_metadata_version",
    "tests/test_synth.py::test_manifest_parses_like_the_real_one",
    "tests/test_synth.py::test_release_passes_strict_prepare",
    "tests/test_golden_records.py::test_the_unit_check_takes_a_new_catalogue_task_and_no_other_change",
    "tests/test_golden_records.py::test_simple_models_give_the_golden_records[fixed_B]",
    "tests/test_real_sample_tasks.py::test_fixed_letter_runs_every_task_at_chance[levante]",
    # and every fast test that reads the catalogue or the task folders: docs table, variant names, layers, schema
    "tests/test_task_docs.py",
    "tests/test_variant.py",
    "tests/test_import_rules.py",
    "tests/test_testing_boundary.py",
    "tests/test_schema.py",
]


def tracked_files() -> list[str]:
    """The repository's files as git knows them (tracked, and new files not ignored), without deleted ones."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    return [rel for rel in listed if rel and (REPO_ROOT / rel).is_file()]


def run(scratch: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    """`python <args>` in the scratch copy, which wins over any installed levante_tasks."""
    env = {**os.environ, "PYTHONPATH": str(scratch), "LEVANTE_SHARED": str(shared_dir())}
    return subprocess.run([sys.executable, *args], cwd=scratch, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shared_dir() is None:
        pytest.skip("../shared/levante-sample is not present next to this checkout (set LEVANTE_SHARED)")
    if shutil.which("git") is None or not (REPO_ROOT / ".git").exists():
        pytest.skip("needs a git checkout to copy the repository's files from")
    root = tmp_path_factory.mktemp("scratch") / "repo"
    for rel in tracked_files():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / rel, root / rel)
    folder = root / "levante_tasks" / "tasks" / FOLDER
    folder.mkdir()
    for name, text in PIECES.items():
        (folder / name).write_text(text, encoding="utf-8")
    registry = root / "levante_tasks" / "tasks" / "__init__.py"
    text = registry.read_text(encoding="utf-8")
    registry.write_text(text.replace("\n)\n", f'\n    "{FOLDER}",\n)\n', 1), encoding="utf-8")  # closes FOLDERS
    made = run(root, ["-c", REGENERATE])
    assert made.returncode == 0, made.stderr[-3000:]
    return root


def test_one_folder_and_one_registry_line_add_a_picture_task(scratch: Path) -> None:
    assert (scratch / "levante_tasks/tasks/picture_probe/levante_picture_probe_mc.yaml").is_file()  # beside its code
    docs = (scratch / "docs/tasks.md").read_text()
    assert "| `levante_picture_probe` | picture-probe | `pprobe` | pictures |" in docs
    result = run(scratch, ["-m", "pytest", "-q", "-p", "no:cacheprovider", *REGISTRY_TESTS])
    assert result.returncode == 0, result.stdout[-6000:]
    assert " passed" in result.stdout and "skipped" not in result.stdout.splitlines()[-1], result.stdout[-2000:]


def test_a_missing_registry_line_or_piece_fails_the_checklist(scratch: Path) -> None:
    registry = scratch / "levante_tasks" / "tasks" / "__init__.py"
    listed = registry.read_text(encoding="utf-8")
    piece = scratch / "levante_tasks" / "tasks" / FOLDER / "fixture.py"
    try:
        registry.write_text(listed.replace(f'    "{FOLDER}",\n', ""), encoding="utf-8")
        unlisted = run(scratch, ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_new_task.py"])
        assert unlisted.returncode == 1, unlisted.stdout[-3000:]
        assert "add these to FOLDERS" in unlisted.stdout and "picture_probe" in unlisted.stdout
        registry.write_text(listed, encoding="utf-8")
        piece.unlink()
        incomplete = run(scratch, ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_new_task.py"])
        assert incomplete.returncode == 1, incomplete.stdout[-3000:]
        assert "levante_tasks/tasks/picture_probe/fixture.py: SPEC = FixtureSpec(...)" in incomplete.stdout
    finally:
        registry.write_text(listed, encoding="utf-8")
        piece.write_text(PIECES["fixture.py"], encoding="utf-8")
