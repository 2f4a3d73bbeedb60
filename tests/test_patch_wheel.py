"""The patch sets ship inside the levante-tasks wheel, so the patcher works from a plain wheel install.

The wheel is built from a copy of the sources (the checkout gets no build/ or egg-info) and unpacked into a
folder; the patcher then runs from there alone (`python -S`, outside the checkout) on a copy of the installed
lmms-eval. scripts/test_lmms_eval_version.sh does the same through pip and the `levante-tasks` script.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from levante_tasks.lmms.patcher.engine import revert_patch_set
from levante_tasks.lmms.patcher.patchset import PATCHES_DIR
from levante_tasks.lmms.patcher.target import installed_root, installed_version, resolve_target

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """levante-tasks built as a wheel (offline: the venv's setuptools, no build isolation)."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO_ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("levante_tasks", "adapters"):
        shutil.copytree(REPO_ROOT / name, src / name, ignore=ignore)
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    build = subprocess.run([*pip_wheel, "-w", str(base), str(src)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    (found,) = base.glob("levante_tasks-*.whl")
    return found


def test_wheel_holds_every_patch_set_file(wheel: Path) -> None:
    shipped = {
        path.relative_to(REPO_ROOT).as_posix(): path.read_bytes()
        for path in sorted(PATCHES_DIR.rglob("*"))
        if path.is_file()
    }
    assert any("/v0.7.2/" in p for p in shipped) and any("/v0.7.3/" in p for p in shipped)
    with zipfile.ZipFile(wheel) as archive:
        prefix = "levante_tasks/lmms/patcher/patches/"
        in_wheel = {n: archive.read(n) for n in archive.namelist() if n.startswith(prefix)}
    assert in_wheel == shipped


def test_wheel_ships_l0_bench_configs_with_their_license_and_notice(wheel: Path) -> None:
    """L0-Bench's example configs are Apache-2.0: the license text and the notice travel with them (issue 21)."""
    folder = REPO_ROOT / "levante_tasks/l0/configs/upstream"
    configs = sorted(p.name for p in folder.glob("*.yaml"))
    assert len(configs) == 4
    with zipfile.ZipFile(wheel) as archive:
        prefix = "levante_tasks/l0/configs/upstream/"
        in_wheel = {n.removeprefix(prefix): archive.read(n) for n in archive.namelist() if n.startswith(prefix)}
    assert sorted(in_wheel) == sorted([*configs, "LICENSE", "NOTICE.md"])
    assert all(in_wheel[name] == (folder / name).read_bytes() for name in in_wheel)
    assert in_wheel["LICENSE"].decode().split()[:4] == ["Apache", "License", "Version", "2.0,"]
    notice = in_wheel["NOTICE.md"].decode()
    assert "NVIDIA" in notice and "Apache License, Version 2.0" in notice
    assert all(f"`{name}`" in notice for name in configs)
    for name in configs:
        assert "Apache-2.0" in in_wheel[name].decode().splitlines()[1], name


def test_patcher_runs_from_the_unpacked_wheel_alone(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    src = installed_root()
    dist_info = f"lmms_eval-{installed_version(src)}.dist-info"
    tree = tmp_path / "lmms"
    shutil.copytree(src / "lmms_eval", tree / "lmms_eval", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(src / dist_info, tree / dist_info)
    revert_patch_set(*resolve_target(tree))
    script = (
        "import sys\n"
        "from levante_tasks.lmms.patcher import installed_lmms_eval, patchset\n"
        "from levante_tasks.lmms.patcher.cli import main\n"
        "assert str(patchset.PATCHES_DIR).startswith(sys.argv[2]), patchset.PATCHES_DIR\n"
        "assert main(['patch', '--target', sys.argv[1]]) == 0 and main(['check', '--target', sys.argv[1]]) == 0\n"
        "print('RESULT', installed_lmms_eval(sys.argv[1]))\n"
    )
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(site)}
    run = subprocess.run(  # -S: no site-packages, so neither the checkout nor the venv's levante_tasks is importable
        [sys.executable, "-S", "-c", script, str(tree), str(site)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "'patched': True" in run.stdout.split("RESULT", 1)[1]


def test_wheel_metadata_names_both_licenses(wheel: Path) -> None:
    """The wheel's metadata: our code's MIT and the shipped L0-Bench configs' Apache-2.0, with both texts."""
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        lines = archive.read(metadata).decode().splitlines()
        licenses = sorted(n.split(".dist-info/licenses/", 1)[1] for n in archive.namelist()
                          if ".dist-info/licenses/" in n)
    assert "License-Expression: MIT AND Apache-2.0" in lines
    assert licenses == ["LICENSE", "levante_tasks/l0/configs/upstream/LICENSE"]
