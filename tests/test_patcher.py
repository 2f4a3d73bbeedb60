"""The lmms-eval patcher on fresh copies of the installed tree: apply, re-apply, check, revert, audit, refusals."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from levante_tasks.errors import LevanteError
from levante_tasks.lmms_patch import applied_patch_record
from levante_tasks.lmms_patch.audit import audit_tree
from levante_tasks.lmms_patch.cli import main as patch_main
from levante_tasks.lmms_patch.engine import (
    RECORD_NAME,
    apply_patch_set,
    file_states,
    read_record,
    revert_patch_set,
)
from levante_tasks.lmms_patch.patchset import PatchSet
from levante_tasks.lmms_patch.target import installed_root, resolve_target

REPO_ROOT = Path(__file__).resolve().parents[1]
COMMIT = "cb45ac4d4a667ea5ef89c7a148bff69b3489b981"
PATCH_SET = PatchSet()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def pristine_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the installed lmms_eval (+ dist-info), reverted to upstream bytes if the venv is patched."""
    src = installed_root()
    root = tmp_path_factory.mktemp("template")
    shutil.copytree(src / "lmms_eval", root / "lmms_eval", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(src / "lmms_eval-0.7.2.dist-info", root / "lmms_eval-0.7.2.dist-info")
    revert_patch_set(resolve_target(root, "0.7.2", COMMIT), PATCH_SET)
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
    shutil.copytree(pristine_template / "lmms_eval-0.7.2.dist-info", root / "lmms_eval-0.7.2.dist-info")
    return root


def target_of(root: Path):
    return resolve_target(root, "0.7.2", COMMIT)


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
    assert record["upstream"]["commit"] == COMMIT
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
        with pytest.raises(LevanteError, match=r"models/chat/huggingface\.py: sha256 .* matches neither"):
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
    listing = "".join(f"{sha(PATCH_SET.folder / n)}  {n}\n" for n in PATCH_SET.series)
    assert PATCH_SET.patch_set_sha256 == hashlib.sha256(listing.encode()).hexdigest()
    assert len(PATCH_SET.series) == len(set(PATCH_SET.series)) == len(PATCH_SET.pins)


def test_pins_start_from_the_upstream_file_hashes() -> None:
    seen: set[str] = set()
    for pin in PATCH_SET.pins:
        assert pin.before != pin.after
        if pin.path not in seen:
            assert pin.before == PATCH_SET.tree_pins[pin.path], pin.name
            seen.add(pin.path)
    assert PATCH_SET.upstream == {"repo": "EvolvingLMMs-Lab/lmms-eval", "tag": "v0.7.2", "commit": COMMIT}


def test_shipped_tree_pins_equal_the_shared_pin_list(shared: Path) -> None:
    shared_list = shared / "pins" / f"lmms-eval-{COMMIT}.sha256"
    assert (PATCH_SET.folder / shared_list.name).read_bytes() == shared_list.read_bytes()


def test_audit_of_the_wheel_copy(full_tree: Path) -> None:
    target = target_of(full_tree)
    report = audit_tree(target, PATCH_SET)
    assert report.ok and not report.differ and not report.missing and not report.extra
    assert len(report.missing_expected) == len(PATCH_SET.wheel_omits) > 100
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


def test_checkout_must_be_at_the_pinned_commit(tree: Path) -> None:
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "lmms_eval"], check=True)
    subprocess.run([*git, "commit", "-qm", "copy"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    with pytest.raises(LevanteError, match=f"checkout is at {head}, not the pinned commit {COMMIT}"):
        resolve_target(tree, "0.7.2", COMMIT)
    checkout = resolve_target(tree, "0.7.2", head)
    assert checkout.kind == "checkout"
    apply_patch_set(checkout, PATCH_SET)
    assert audit_tree(checkout, PATCH_SET).missing  # a checkout must hold every file: nothing is "expected"


def test_other_installed_version_is_refused(tree: Path) -> None:
    (tree / "lmms_eval-0.7.2.dist-info").rename(tree / "lmms_eval-0.7.3.dist-info")
    with pytest.raises(LevanteError, match="lmms-eval 0.7.3 is installed; patches exist for 0.7.2"):
        target_of(tree)


def test_folder_without_lmms_eval_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LevanteError, match="no lmms_eval package here"):
        resolve_target(tmp_path, "0.7.2", COMMIT)


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
