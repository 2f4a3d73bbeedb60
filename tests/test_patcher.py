"""The lmms-eval patcher on fresh copies of the installed tree: apply, re-apply, check, revert, audit, refusals.

The tree tests run against whichever lmms-eval version this Python has installed (0.7.2 in .venv; `make test`
also runs them in a throwaway venv holding 0.7.3); the checks of the shipped patch sets cover every version.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from faults import fill_disk, one_error_line, run_cli, small_tmpfs
from packaging.requirements import Requirement

from levante_tasks.errors import LevanteError
from levante_tasks.lmms.patcher import applied_patch_record
from levante_tasks.lmms.patcher.audit import audit_tree
from levante_tasks.lmms.patcher.cli import main as patch_main
from levante_tasks.lmms.patcher.engine import (
    RECORD_NAME,
    apply_patch_set,
    file_states,
    read_record,
    revert_patch_set,
)
from levante_tasks.lmms.patcher.patchset import DEFAULT_VERSION, PatchSet, patch_sets
from levante_tasks.lmms.patcher.target import installed_root, resolve_target

REPO_ROOT = Path(__file__).resolve().parents[1]
COMMIT = "cb45ac4d4a667ea5ef89c7a148bff69b3489b981"  # v0.7.2
PATCH_SET = resolve_target(installed_root())[1]  # the set for the installed version
VERSION = PATCH_SET.version
DIST_INFO = f"lmms_eval-{VERSION}.dist-info"
ALL_SETS = patch_sets()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def pristine_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the installed lmms_eval (+ dist-info), reverted to upstream bytes if the venv is patched."""
    src = installed_root()
    root = tmp_path_factory.mktemp("template")
    shutil.copytree(src / "lmms_eval", root / "lmms_eval", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(src / DIST_INFO, root / DIST_INFO)
    revert_patch_set(*resolve_target(root))
    return root


@pytest.fixture
def full_tree(pristine_template: Path, tmp_path: Path) -> Path:
    """A fresh, writable, unpatched copy of the whole installed tree for one test."""
    root = tmp_path / "site-packages"
    shutil.copytree(pristine_template, root)
    return root


@pytest.fixture
def tree(pristine_template: Path, tmp_path: Path) -> Path:
    """A fresh, unpatched copy of just what the patcher touches (package marker, targets, dist-info): fast."""
    root = tmp_path / "site-packages"
    for rel in ["lmms_eval/__init__.py", *PATCH_SET.targets]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(pristine_template / rel, root / rel)
    shutil.copytree(pristine_template / DIST_INFO, root / DIST_INFO)
    return root


def target_of(root: Path):
    target, patch_set = resolve_target(root)
    assert patch_set == PATCH_SET
    return target


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file under lmms_eval/ (the record included), to prove what changed."""
    base = root / "lmms_eval"
    return {p.relative_to(root).as_posix(): sha(p) for p in sorted(base.rglob("*")) if p.is_file()}


def test_copy_starts_at_upstream_hashes(full_tree: Path) -> None:
    for path in PATCH_SET.targets:
        assert sha(full_tree / path) == PATCH_SET.tree_pins[path], path
    assert not (full_tree / "lmms_eval" / RECORD_NAME).exists()


def test_patch_reapply_check_revert_roundtrip(full_tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(full_tree)
    assert patch_main(["check", "--target", str(full_tree)]) == 1

    assert patch_main(["patch", "--target", str(full_tree)]) == 0
    for path, (pinned, patched) in PATCH_SET.targets.items():
        assert sha(full_tree / path) == patched != pinned
    record = read_record(target_of(full_tree))
    assert record["patch_set_sha256"] == PATCH_SET.patch_set_sha256
    assert record["upstream"]["identity"] == PATCH_SET.identity and record["upstream"]["version"] == VERSION
    assert [entry["name"] for entry in record["series"]] == PATCH_SET.series
    after = snapshot(full_tree)
    changed = {p for p in after if after[p] != before.get(p)}
    assert changed == set(PATCH_SET.targets) | {f"lmms_eval/{RECORD_NAME}"}

    patched_state = snapshot(full_tree)
    mtimes = {p: (full_tree / p).stat().st_mtime_ns for p in patched_state}
    assert patch_main(["patch", "--target", str(full_tree)]) == 0  # idempotent: nothing rewritten
    assert snapshot(full_tree) == patched_state
    assert {p: (full_tree / p).stat().st_mtime_ns for p in patched_state} == mtimes

    capsys.readouterr()
    assert patch_main(["check", "--target", str(full_tree / "lmms_eval")]) == 0
    printed = capsys.readouterr().out
    assert PATCH_SET.patch_set_sha256 in printed

    assert patch_main(["revert", "--target", str(full_tree)]) == 0
    assert snapshot(full_tree) == before
    assert patch_main(["revert", "--target", str(full_tree)]) == 0
    assert snapshot(full_tree) == before


def test_file_modes_survive_patch_and_revert(tree: Path) -> None:
    instance = tree / "lmms_eval/api/instance.py"
    os.chmod(instance, 0o640)
    apply_patch_set(target_of(tree), PATCH_SET)
    assert instance.stat().st_mode & 0o777 == 0o640
    revert_patch_set(target_of(tree), PATCH_SET)
    assert instance.stat().st_mode & 0o777 == 0o640


def test_dry_run_writes_nothing(tree: Path) -> None:
    before = snapshot(tree)
    outcome = apply_patch_set(target_of(tree), PATCH_SET, dry_run=True)
    assert outcome.changed == sorted(PATCH_SET.targets)
    assert snapshot(tree) == before
    assert patch_main(["patch", "--dry-run", "--target", str(tree)]) == 0
    assert snapshot(tree) == before
    apply_patch_set(target_of(tree), PATCH_SET)
    patched = snapshot(tree)
    assert patch_main(["revert", "--dry-run", "--target", str(tree)]) == 0
    assert snapshot(tree) == patched


@pytest.mark.parametrize("patched_first", [False, True])
def test_modified_target_is_refused_by_name(tree: Path, patched_first: bool, capsys) -> None:
    if patched_first:
        apply_patch_set(target_of(tree), PATCH_SET)
    victim = tree / "lmms_eval/models/chat/huggingface.py"
    victim.write_bytes(victim.read_bytes() + b"# local edit\n")
    before = snapshot(tree)
    for action in (apply_patch_set, revert_patch_set):
        refused = rf"models/chat/huggingface\.py: sha256 .* matches neither the pinned lmms-eval {VERSION} file"
        with pytest.raises(LevanteError, match=refused):
            action(target_of(tree), PATCH_SET)
    assert snapshot(tree) == before  # refused before any file was written
    capsys.readouterr()
    assert patch_main(["patch", "--target", str(tree)]) == 2
    assert "huggingface.py" in capsys.readouterr().err


def test_interrupted_patch_is_finished_by_a_rerun(tree: Path, capsys) -> None:
    apply_patch_set(target_of(tree), PATCH_SET)
    patched = snapshot(tree)
    revert_patch_set(target_of(tree), PATCH_SET)
    # Simulate a run that died after writing one file and before the record.
    shutil.copyfile(_patched_copy(tree, patched, "lmms_eval/evaluator.py"), tree / "lmms_eval/evaluator.py")
    states = file_states(target_of(tree), PATCH_SET)
    assert sorted(states.values()).count("patched") == 1
    capsys.readouterr()
    assert patch_main(["check", "--target", str(tree)]) == 1
    assert "partial" in capsys.readouterr().out
    outcome = apply_patch_set(target_of(tree), PATCH_SET)
    assert "lmms_eval/evaluator.py" not in outcome.changed
    assert snapshot(tree) == patched


@pytest.mark.parametrize("fault", ["read-only folder", "full disk"])
def test_failed_write_changes_nothing_and_is_one_line(fault: str, pristine_template: Path) -> None:
    """Every patched file is written before any is renamed in: a write that fails leaves the tree as it was."""
    with small_tmpfs("4m") as mount:
        tree = mount / "site-packages"
        for rel in ["lmms_eval/__init__.py", *PATCH_SET.targets]:
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(pristine_template / rel, tree / rel)
        shutil.copytree(pristine_template / DIST_INFO, tree / DIST_INFO)
        before = snapshot(tree)
        if fault == "read-only folder":  # tasks/__init__.py comes after instance.py and __main__.py in the series
            os.chmod(tree / "lmms_eval" / "tasks", 0o555)
            blamed = "lmms_eval/tasks/__init__.py: cannot write the file (Permission denied)"
        else:  # room for instance.py's new bytes, not for __main__.py's
            fill_disk(mount, keep_free=16 * 1024)
            blamed = "lmms_eval/__main__.py: cannot write the file (No space left on device)"
        run = run_cli(["lmms-eval", "patch", "--target", tree], drop_dac=True, cwd=mount)
        assert run.returncode == 2
        line = one_error_line(run.stderr)
        assert blamed in line and "nothing was changed" in line and str(mount) not in line
        assert snapshot(tree) == before
        assert not [p for p in tree.rglob(".*") if p.name != ".filler"]  # no temp files left behind
        os.chmod(tree / "lmms_eval" / "tasks", 0o755)
        (mount / ".filler").unlink(missing_ok=True)
        assert run_cli(["lmms-eval", "patch", "--target", tree], cwd=mount).returncode == 0
        assert set(file_states(target_of(tree), PATCH_SET).values()) == {"patched"}


def test_failed_revert_keeps_files_and_record(tree: Path) -> None:
    apply_patch_set(target_of(tree), PATCH_SET)
    before = snapshot(tree)  # the record included
    os.chmod(tree / "lmms_eval" / "tasks", 0o555)
    try:
        run = run_cli(["lmms-eval", "revert", "--target", tree], drop_dac=True, cwd=tree)
    finally:
        os.chmod(tree / "lmms_eval" / "tasks", 0o755)
    assert run.returncode == 2 and "tasks/__init__.py: cannot write the file" in one_error_line(run.stderr)
    assert snapshot(tree) == before
    assert applied_patch_record(tree) is not None


def test_temp_files_of_a_killed_run_are_removed_by_the_next(tree: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    leftover = tree / "lmms_eval" / "api" / f".instance.py.{int(dead.stdout)}.x1y2z3.part"
    leftover.write_bytes(b"half a file")  # what kill -9 between writing a temp file and renaming it leaves
    assert patch_main(["patch", "--target", str(tree)]) == 0
    assert not leftover.exists()
    assert set(file_states(target_of(tree), PATCH_SET).values()) == {"patched"}


def _patched_copy(tree: Path, patched: dict[str, str], rel: str) -> Path:
    """Recreate the patched bytes of one file in a side folder (hash-checked against the snapshot)."""
    side = tree.parent / "side"
    shutil.copytree(tree, side)
    apply_patch_set(target_of(side), PATCH_SET)
    assert sha(side / rel) == patched[rel]
    return side / rel


def test_applied_patch_record_tracks_the_tree(tree: Path) -> None:
    assert applied_patch_record(tree) is None
    apply_patch_set(target_of(tree), PATCH_SET)
    record = applied_patch_record(tree)
    assert record is not None and record["patch_set_sha256"] == PATCH_SET.patch_set_sha256
    assert json.loads((tree / "lmms_eval" / RECORD_NAME).read_text()) == record
    main_py = tree / "lmms_eval/__main__.py"
    main_py.write_bytes(main_py.read_bytes() + b"\n")
    assert applied_patch_record(tree / "lmms_eval") is None  # the record no longer describes the files


def test_patch_set_hash_is_the_sha256sum_listing() -> None:
    for patch_set in ALL_SETS.values():
        listing = "".join(f"{sha(patch_set.folder / n)}  {n}\n" for n in patch_set.series)
        assert patch_set.patch_set_sha256 == hashlib.sha256(listing.encode()).hexdigest()
        assert len(patch_set.series) == len(set(patch_set.series)) == len(patch_set.pins)


@pytest.mark.parametrize("version", sorted(ALL_SETS))
def test_pins_chain_from_the_upstream_file_hashes(version: str) -> None:
    """Each patch starts where the previous one on its file ended; the first from the upstream file's hash."""
    patch_set = ALL_SETS[version]
    reached: dict[str, str] = {}
    for pin in patch_set.pins:
        assert pin.before != pin.after
        assert pin.before == reached.get(pin.path, patch_set.tree_pins[pin.path]), pin.name
        assert patch_set.file_patch(pin.name).path == pin.path, pin.name
        reached[pin.path] = pin.after
    assert {p: c[-1] for p, c in patch_set.chains.items()} == reached


def test_shipped_patch_sets_and_their_pins() -> None:
    assert sorted(ALL_SETS) == ["0.7.2", "0.7.3"]
    v072, v073 = ALL_SETS["0.7.2"], ALL_SETS["0.7.3"]
    assert v072.upstream == {
        "repo": "EvolvingLMMs-Lab/lmms-eval", "tag": "v0.7.2", "commit": COMMIT, "version": "0.7.2",
        "wheel": "lmms_eval-0.7.2-py3-none-any.whl",
        "wheel_sha256": "fb437fc40064f92e20f752d4d298bf77d72cb30ac9c841f78b6c5126c9bc8bc8",
    }
    assert v072.identity == COMMIT and v072.tree_pins_name == f"lmms-eval-{COMMIT}.sha256"
    wheel_073 = "5709f9f9f56a8f5f22bf379571bd1c5e7702af5ae2bbb9637001c5dd91168895"
    assert v073.upstream["tag"] is None and v073.upstream["commit"] is None
    assert v073.upstream["wheel"] == "lmms_eval-0.7.3-py3-none-any.whl"
    assert v073.identity == f"wheel-sha256:{wheel_073}" and v073.tree_pins_name == "lmms-eval-0.7.3-wheel.sha256"
    assert not v073.wheel_omits and len(v072.wheel_omits) == 258
    # Same number = same bug in both sets; 0.7.3's wheel ships the templates, so P0 (0004) is not needed there.
    assert [n for n in v072.series if not n.startswith("0004-")] == v073.series
    assert len(v073.tree_pins) == 3181 and len(v072.tree_pins) == 2943


def test_a_patch_set_in_the_wrong_folder_is_refused(tmp_path: Path) -> None:
    shutil.copytree(ALL_SETS["0.7.3"].folder, tmp_path / "v0.7.4")
    with pytest.raises(LevanteError, match=r"says version 0\.7\.3 but lies in v0\.7\.4/") as wrong:
        patch_sets(tmp_path)
    with pytest.raises(LevanteError, match="no lmms-eval patch sets here") as empty:
        patch_sets(tmp_path / "v0.7.4")
    (tmp_path / "v0.7.4" / "pins.txt").write_text("version 0.7.4\n", encoding="utf-8")
    with pytest.raises(LevanteError, match="pins.txt: no 'upstream' line") as damaged:
        _ = PatchSet(tmp_path / "v0.7.4").upstream
    for info in (wrong, empty, damaged):  # messages never show the absolute folder (user names live there)
        assert str(tmp_path) not in str(info.value), info.value


def test_installed_files_match_the_pinned_wheel_record() -> None:
    """The installed RECORD (the wheel's own per-file sha256) agrees with the shipped pins of that version."""
    import base64
    import csv

    root = installed_root()
    with (root / DIST_INFO / "RECORD").open(newline="") as handle:
        record = {
            row[0]: base64.urlsafe_b64decode(row[1].split("=", 1)[1] + "==").hex()
            for row in csv.reader(handle)
            if row[0].startswith("lmms_eval/") and row[1]
        }
    assert set(record) == set(PATCH_SET.tree_pins) - PATCH_SET.wheel_omits
    assert {p: PATCH_SET.tree_pins[p] for p in record} == record


def test_default_version_is_the_constraints_pin_and_pyproject_caps_at_shipped_sets() -> None:
    pins = (REPO_ROOT / "constraints.txt").read_text().splitlines()
    assert f"lmms_eval=={DEFAULT_VERSION}" in pins and DEFAULT_VERSION in ALL_SETS
    (requirement,) = re.findall(r'^\s*"(lmms-eval[^"]*)",', (REPO_ROOT / "pyproject.toml").read_text(), re.M)
    spec = Requirement(requirement).specifier
    assert all(spec.contains(v) for v in ALL_SETS)
    assert not any(spec.contains(v) for v in ("0.7.1", "0.7.4", "0.8.0"))


def test_shipped_tree_pins_equal_the_shared_pin_list(shared: Path) -> None:
    shared_list = shared / "pins" / f"lmms-eval-{COMMIT}.sha256"
    assert (ALL_SETS["0.7.2"].folder / shared_list.name).read_bytes() == shared_list.read_bytes()


def test_audit_of_the_wheel_copy(full_tree: Path) -> None:
    target = target_of(full_tree)
    report = audit_tree(target, PATCH_SET)
    assert report.ok and not report.differ and not report.missing and not report.extra
    assert len(report.missing_expected) == len(PATCH_SET.wheel_omits)
    assert len(report.identical) + len(report.missing_expected) == len(PATCH_SET.tree_pins)

    apply_patch_set(target, PATCH_SET)
    report = audit_tree(target, PATCH_SET)
    assert report.ok and sorted(report.patched) == sorted(PATCH_SET.targets)

    (full_tree / "lmms_eval/api/metrics.py").write_text("changed\n")
    (full_tree / "lmms_eval/api/registry.py").unlink()
    (full_tree / "lmms_eval/tasks/extra_task.yaml").write_text("task: x\n")
    report = audit_tree(target, PATCH_SET)
    assert not report.ok
    assert report.differ == ["lmms_eval/api/metrics.py"]
    assert report.missing == ["lmms_eval/api/registry.py"]
    assert report.extra == ["lmms_eval/tasks/extra_task.yaml"]
    assert patch_main(["audit", "--target", str(full_tree)]) == 1


def test_checkout_must_be_at_a_pinned_commit(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "lmms_eval"], check=True)
    subprocess.run([*git, "commit", "-qm", "copy"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    with pytest.raises(LevanteError, match=f"checkout is at {head}, not a pinned commit \\(v0.7.2 = {COMMIT}\\)"):
        resolve_target(tree)
    # A patch set pinned to this very commit accepts the checkout.
    folder = tmp_path / "sets" / f"v{VERSION}"
    shutil.copytree(PATCH_SET.folder, folder)
    pins = (folder / "pins.txt").read_text().splitlines()
    up = next(i for i, ln in enumerate(pins) if ln.startswith("upstream "))
    pins[up] = f"upstream EvolvingLMMs-Lab/lmms-eval v{VERSION} {head}"
    (folder / "pins.txt").write_text("\n".join(pins) + "\n")
    shutil.copy(PATCH_SET.folder / PATCH_SET.tree_pins_name, folder / f"lmms-eval-{head}.sha256")
    (folder / "wheel-omits.txt").write_text("")
    monkeypatch.setattr("levante_tasks.lmms.patcher.target.patch_sets", lambda: {VERSION: PatchSet(folder)})
    checkout, patch_set = resolve_target(tree)
    assert checkout.kind == "checkout" and patch_set.identity == head
    apply_patch_set(checkout, patch_set)
    assert audit_tree(checkout, patch_set).missing  # a checkout must hold every file: nothing is "expected"


def test_version_without_patches_is_refused(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / DIST_INFO).rename(tree / "lmms_eval-0.7.9.dist-info")
    before = snapshot(tree)
    with pytest.raises(LevanteError, match="lmms-eval 0.7.9 is installed; patches exist for 0.7.2, 0.7.3$"):
        resolve_target(tree)
    assert patch_main(["patch", "--target", str(tree)]) == 2
    assert "lmms-eval 0.7.9 is installed" in capsys.readouterr().err
    assert snapshot(tree) == before


@pytest.mark.parametrize("other", sorted(set(ALL_SETS) - {VERSION}))
def test_patch_set_follows_the_dist_info_version(tree: Path, other: str) -> None:
    """Files of one version under another version's dist-info are refused by name, before anything is written."""
    (tree / DIST_INFO).rename(tree / f"lmms_eval-{other}.dist-info")
    target, patch_set = resolve_target(tree)
    assert patch_set is ALL_SETS[other] or patch_set.folder == ALL_SETS[other].folder
    before = snapshot(tree)
    with pytest.raises(LevanteError, match=rf"lmms_eval/\S+\.py: sha256 .* the pinned lmms-eval {other} file"):
        apply_patch_set(target, patch_set)
    assert snapshot(tree) == before


def test_copy_without_dist_info_is_recognised_by_its_files(tree: Path) -> None:
    shutil.rmtree(tree / DIST_INFO)
    assert resolve_target(tree)[1].version == VERSION
    apply_patch_set(*resolve_target(tree))
    assert resolve_target(tree)[1].version == VERSION  # patched files are recognised too
    main_py = tree / "lmms_eval/__main__.py"
    main_py.write_bytes(main_py.read_bytes() + b"# local edit\n")
    with pytest.raises(LevanteError, match="no lmms_eval dist-info, and its files match no patch set"):
        resolve_target(tree)


def test_two_dist_infos_are_refused(tree: Path) -> None:
    shutil.copytree(tree / DIST_INFO, tree / "lmms_eval-0.7.9.dist-info")
    with pytest.raises(LevanteError, match=rf"several lmms_eval dist-info folders \({VERSION}, 0\.7\.9\)"):
        resolve_target(tree)


def test_folder_without_lmms_eval_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LevanteError, match="no lmms_eval package here"):
        resolve_target(tmp_path)


# The last patch on a file an earlier patch also changes: a tree patched before it existed has that file outdated.
LAST_CHAINED = [pin for pin in PATCH_SET.pins if len(PATCH_SET.chains[pin.path]) >= 3][-1]  # upstream + 2 patches


def _older_patch_set(tmp_path: Path) -> PatchSet:
    """The shipped set without LAST_CHAINED (what a tree patched before that patch existed carries)."""
    folder = tmp_path / "older" / f"v{VERSION}"
    shutil.copytree(PATCH_SET.folder, folder)
    for name in ("series", "pins.txt"):
        lines = (folder / name).read_text().splitlines(keepends=True)
        (folder / name).write_text("".join(ln for ln in lines if not ln.startswith(LAST_CHAINED.name)))
    older = PatchSet(folder)
    assert older.series == [name for name in PATCH_SET.series if name != LAST_CHAINED.name]
    assert len(older.chains[LAST_CHAINED.path]) >= 2
    return older


def test_tree_patched_by_an_older_set_is_upgraded_and_reverted(tree: Path, tmp_path: Path, capsys) -> None:
    pristine = snapshot(tree)
    older = _older_patch_set(tmp_path)
    apply_patch_set(target_of(tree), older)
    upgraded_file = LAST_CHAINED.path
    states = file_states(target_of(tree), PATCH_SET)
    assert states.pop(upgraded_file) == "outdated" and set(states.values()) == {"patched"}
    capsys.readouterr()
    assert patch_main(["check", "--target", str(tree)]) == 1
    assert f"{upgraded_file}: outdated" in capsys.readouterr().out

    outcome = apply_patch_set(target_of(tree), PATCH_SET)
    assert outcome.changed == [upgraded_file]
    assert set(file_states(target_of(tree), PATCH_SET).values()) == {"patched"}
    assert read_record(target_of(tree))["patch_set_sha256"] == PATCH_SET.patch_set_sha256
    assert patch_main(["check", "--target", str(tree)]) == 0

    revert_patch_set(target_of(tree), PATCH_SET)
    apply_patch_set(target_of(tree), older)
    revert_patch_set(target_of(tree), PATCH_SET)  # from the older state straight back to upstream bytes
    assert snapshot(tree) == pristine


def test_plain_script_runs_without_the_package_installed(tree: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    script = REPO_ROOT / "scripts" / "patch_lmms_eval.py"
    run = subprocess.run(
        [sys.executable, "-S", str(script), "patch", "--target", str(tree)],  # -S: no site-packages at all
        capture_output=True, text=True, env=env, cwd=tree,
    )
    assert run.returncode == 0, run.stderr
    assert all(state == "patched" for state in file_states(target_of(tree), PATCH_SET).values())
    assert "lmms_eval/.levante_patches.json" in run.stdout


def test_levante_tasks_cli_has_the_lmms_eval_command(tree: Path) -> None:
    from levante_tasks.cli import main

    assert main(["lmms-eval", "check", "--target", str(tree)]) == 1
    assert main(["lmms-eval", "patch", "--target", str(tree)]) == 0
    assert main(["lmms-eval", "check", "--target", str(tree)]) == 0


def test_fetch_script_refuses_a_tag_that_names_another_commit(tmp_path: Path) -> None:
    upstream = tmp_path / "upstream"
    (upstream / "lmms_eval").mkdir(parents=True)
    (upstream / "lmms_eval" / "__init__.py").write_text("")
    git = ["git", "-C", str(upstream), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-qm", "moved tag"], ["tag", "v0.7.2"]):
        subprocess.run([*git, *cmd], check=True)
    env = {**os.environ, "LMMS_EVAL_URL": upstream.as_uri(), "LMMS_EVAL_DEST": str(tmp_path / "dest")}
    script = str(REPO_ROOT / "scripts" / "fetch_lmms_eval.sh")
    run = subprocess.run(["bash", script], capture_output=True, text=True, env=env)
    assert run.returncode == 1 and f"not the pinned commit {COMMIT}" in run.stderr
    assert (tmp_path / "dest" / ".git").is_dir()  # cloned, then refused

    (tmp_path / "plain").mkdir()
    env["LMMS_EVAL_DEST"] = str(tmp_path / "plain")
    run = subprocess.run(["bash", script], capture_output=True, text=True, env=env)
    assert run.returncode == 1 and "is not a git checkout" in run.stderr


def test_fetch_script_refuses_a_version_pinned_only_by_its_wheel(tmp_path: Path) -> None:
    env = {**os.environ, "LMMS_EVAL_VERSION": "0.7.3", "LMMS_EVAL_DEST": str(tmp_path / "dest")}
    run = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "fetch_lmms_eval.sh")], capture_output=True, text=True,
                         env=env)
    assert run.returncode == 1 and "lmms-eval 0.7.3 has no public tag or commit yet" in run.stderr
    assert not (tmp_path / "dest").exists()


def test_installed_lmms_eval_says_which_version_and_patches(tree: Path, tmp_path: Path) -> None:
    from levante_tasks.lmms.patcher import installed_lmms_eval

    unpatched = {"version": VERSION, "commit": PATCH_SET.identity, "patch_set_sha256": None, "patched": False}
    assert installed_lmms_eval(tree) == unpatched
    apply_patch_set(target_of(tree), PATCH_SET)
    assert installed_lmms_eval(tree / "lmms_eval") == {**unpatched, "patch_set_sha256": PATCH_SET.patch_set_sha256,
                                                       "patched": True}
    older = _older_patch_set(tmp_path)
    revert_patch_set(target_of(tree), PATCH_SET)
    apply_patch_set(target_of(tree), older)  # what an older levante-tasks left: in effect, but not current
    assert installed_lmms_eval(tree) == {**unpatched, "patch_set_sha256": older.patch_set_sha256}
    (tree / DIST_INFO).rename(tree / "lmms_eval-0.7.9.dist-info")
    assert installed_lmms_eval(tree) == {"version": "0.7.9", "commit": None,
                                         "patch_set_sha256": older.patch_set_sha256, "patched": False}
    with pytest.raises(LevanteError, match="no lmms_eval package here"):
        installed_lmms_eval(tmp_path / "nowhere")


def test_installed_lmms_eval_of_this_python() -> None:
    import importlib.metadata

    from levante_tasks.lmms.patcher import installed_lmms_eval

    found = installed_lmms_eval()
    assert found["version"] == importlib.metadata.version("lmms_eval") == VERSION
    assert found["commit"] == PATCH_SET.identity
    assert found["patched"] == (found["patch_set_sha256"] == PATCH_SET.patch_set_sha256)


def test_tasks_path_prints_the_installed_task_folder(tmp_path: Path) -> None:
    """`levante-tasks lmms-eval tasks-path` (README: an unpatched lmms-eval's `--include_path`), run outside the
    checkout as a user would: one line, the folder of the `lmms_eval.tasks` entry point, holding every task's YAMLs,
    and lmms-eval indexes the LEVANTE tasks from it alone (no built-ins, no entry points)."""
    from lmms_eval.tasks import TaskManager

    from levante_tasks.schema.tasks import TASKS

    done = run_cli(["lmms-eval", "tasks-path"], cwd=tmp_path)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1
    folder = Path(lines[0])
    assert folder.is_absolute() and folder.is_dir()
    # the package a process started in that folder imports (in the 0.7.3 overlay: the installed wheel, while this
    # test process imports the checkout)
    where = ("import importlib.util, pathlib; "
             "print(pathlib.Path(importlib.util.find_spec('levante_tasks.tasks').submodule_search_locations[0]).resolve())")
    found = subprocess.run([sys.executable, "-c", where], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert folder == Path(found.stdout.strip())
    for info in TASKS:
        assert (folder / info.folder / f"{info.lmms_name}.yaml").is_file(), info.lmms_name
    assert (folder / "_groups").is_dir() and (folder / "l0_trace").is_dir()
    names = set(TaskManager(include_path=str(folder), include_defaults=False).all_tasks)
    assert {info.lmms_name for info in TASKS} | {"levante", "l0_trace"} <= names
