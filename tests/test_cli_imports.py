"""The CLI imports only what the command it runs needs: `--help` and `prepare` load no harness, model or plotting
library, and no other command's modules (each is checked in a fresh interpreter, where nothing is loaded yet)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from data_helpers import write_release

from levante_tasks.cli import COMMANDS, main

HEAVY = ("torch", "transformers", "lmms_eval", "inspect_ai", "evaluate", "datasets", "scipy", "matplotlib")
OTHER_COMMANDS = ("levante_tasks.compare", "levante_tasks.summary", "levante_tasks.matrix", "levante_tasks.lmms",
                  "levante_tasks.inspect", "levante_tasks.l0", "levante_tasks.synth", "levante_tasks.demo",
                  "levante_tasks.data.standins")


def loaded_after(code: str) -> set[str]:
    """Every module name in sys.modules after `code` ran in a fresh interpreter (a SystemExit is fine)."""
    script = f"import json, sys\ntry:\n    {code}\nexcept SystemExit:\n    pass\n" \
             "print(json.dumps(sorted(sys.modules)), file=sys.stderr)"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300)
    return set(json.loads(result.stderr.splitlines()[-1]))


def found(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    """The `packages` (or modules inside them) among `modules`."""
    return sorted(name for name in packages if any(m == name or m.startswith(name + ".") for m in modules))


def test_importing_the_cli_loads_no_command() -> None:
    modules = loaded_after("import levante_tasks.cli")
    assert found(modules, (*HEAVY, *OTHER_COMMANDS, "levante_tasks.data", "pyarrow", "PIL", "pandas")) == []


def test_help_loads_no_harness_model_or_plotting_library() -> None:
    modules = loaded_after("from levante_tasks.cli import main; main(['--help'])")
    assert "levante_tasks.compare.cli" in modules  # every command is listed, so its module is loaded
    assert found(modules, HEAVY) == []


def test_prepare_loads_only_the_data_layer(tmp_path: Path) -> None:
    write_release(tmp_path / "rel")
    args = ["prepare", "--release", str(tmp_path / "rel"), "--data-dir", str(tmp_path / "data"), "--quiet"]
    modules = loaded_after(f"from levante_tasks.cli import main; assert main({args!r}) == 0")
    assert "levante_tasks.data.prepare" in modules and (tmp_path / "data/2026-01-01/datasets/build.json").is_file()
    assert found(modules, (*HEAVY, *OTHER_COMMANDS, "pandas")) == []  # pyarrow imports pandas for `pa.array`
    assert "tqdm" not in modules  # `--quiet` shows no progress bar
    assert "requests" not in modules  # a local release needs no HTTP client


def test_verify_loads_no_arrow_or_numpy(tmp_path: Path) -> None:
    """verify reads JSON: the records' letters and slider tolerance (schema.items) come without the Arrow schema of
    the item rows, built on first use, so it loads neither pyarrow nor numpy (~0.3 s of CPU per process)."""
    (tmp_path / "runs").mkdir()
    modules = loaded_after(f"from levante_tasks.cli import main; main(['verify', {str(tmp_path / 'runs')!r}])")
    assert "levante_tasks.summary.verify" in modules and "levante_tasks.schema.items" in modules
    assert found(modules, (*HEAVY, "pyarrow", "numpy", "pandas")) == []


def test_prepare_starts_without_the_build_libraries() -> None:
    """pyarrow and numpy (~0.3 s) load while a first prepare's pictures decode, not before its decode workers fork."""
    modules = loaded_after("from levante_tasks.cli import build_parser; build_parser('prepare')")
    assert "levante_tasks.data.prepare" in modules
    assert found(modules, ("pyarrow", "numpy", "levante_tasks.data.build", "levante_tasks.data.card")) == []


def test_help_before_a_command_lists_every_command(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--help", "prepare"])
    listed = capsys.readouterr().out
    assert all(f"    {name}" in listed for name in COMMANDS), listed


def test_a_matrix_without_compare_or_auto_loads_neither(tmp_path: Path) -> None:
    """A --dry-run (as a Slurm job's runner, before any cell) loads no pandas (only `orders: auto` reads a table),
    and the end step of a config without `compare:` loads no comparison code or scipy."""
    (tmp_path / "matrix.yaml").write_text("models: [{name: a, model: levante_fixed, model_args: letter=B}]\n"
                                          "tasks: [levante_trog]\n", encoding="utf-8")
    args = ["matrix", "--config", str(tmp_path / "matrix.yaml"), "--out", str(tmp_path / "out"), "--dry-run"]
    modules = loaded_after(f"from levante_tasks.cli import main; assert main({args!r}) == 0")
    assert "levante_tasks.matrix.run" in modules and found(modules, ("pandas", "levante_tasks.compare")) == []
    end_step = ("from pathlib import Path; from levante_tasks.matrix.config import load_config; "
                "from levante_tasks.matrix.report import _summaries; from levante_tasks.matrix.run import MatrixRun; "
                f"config = load_config(Path({str(tmp_path / 'matrix.yaml')!r})); "
                f"_summaries(MatrixRun(config, Path({str(tmp_path / 'out')!r}), [], []), 'all', [], print)")
    modules = loaded_after(end_step)
    assert "levante_tasks.matrix.report" in modules and found(modules, ("levante_tasks.compare", "scipy")) == []
