"""levante_tasks.blas: the OpenBLAS that numpy and scipy bundle loads without worker threads in `compare` and
`prepare` (their start-up spin cost ~0.1 s of CPU per library and extra core), unless the user set a thread count;
the environment is the user's again afterwards. Each case runs in a fresh interpreter, where no BLAS is loaded yet,
and reads the libraries' thread counts with threadpoolctl (numpy's OpenBLAS and scipy's are separate libraries)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from data_helpers import write_release

from levante_tasks.blas import THREAD_COUNT_VARIABLES
from levante_tasks.data.decoding import available_cores

REPORT = """
from threadpoolctl import threadpool_info
print(json.dumps({"threads": sorted((os.path.basename(i["filepath"]), i["num_threads"]) for i in threadpool_info()
                                    if i["internal_api"] == "openblas"),
                  "environment": {name: os.environ.get(name) for name in THREAD_COUNT_VARIABLES}}))
"""


def blas_after(code: str, **environment: str) -> dict:
    """The OpenBLAS libraries loaded and their thread counts ([file name, threads]), and the thread-count
    variables of os.environ, after `code` ran in a fresh interpreter whose environment sets only `environment`'s
    thread counts."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_COUNT_VARIABLES} | environment
    script = f"import json, os\nfrom levante_tasks.blas import THREAD_COUNT_VARIABLES\n{code}\n{REPORT}"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(autouse=True)
def several_cores() -> None:
    """OpenBLAS starts a worker per core but one: with one core this process may use (its affinity) there is
    nothing to leave out."""
    if available_cores() < 2:
        pytest.skip("needs 2 or more cores (CI has 2)")


def test_numpy_and_scipy_load_with_workers_by_default() -> None:
    """The baseline the others are measured against: without the block, each library starts its workers."""
    found = blas_after("import numpy, scipy.optimize")
    assert len(found["threads"]) == 2 and all(threads > 1 for _, threads in found["threads"]), found


def test_libraries_loaded_in_the_block_start_no_worker_and_the_environment_is_restored() -> None:
    code = ("from levante_tasks.blas import loaded_without_workers\n"
            "with loaded_without_workers():\n    import numpy, scipy.optimize\n"
            "assert len(os.listdir('/proc/self/task')) == 1, os.listdir('/proc/self/task')")  # no worker thread
    found = blas_after(code)
    assert len(found["threads"]) == 2 and all(threads == 1 for _, threads in found["threads"]), found
    assert found["environment"] == dict.fromkeys(THREAD_COUNT_VARIABLES), found


@pytest.mark.parametrize("unset", ["", "0"])
def test_an_empty_or_zero_count_is_no_count_and_is_restored(unset: str) -> None:
    """OpenBLAS reads an empty value or 0 as unset (it would start its workers): the block applies, and the user's
    value is back afterwards."""
    code = ("from levante_tasks.blas import loaded_without_workers\n"
            "with loaded_without_workers():\n    import numpy, scipy.optimize")
    found = blas_after(code, OPENBLAS_NUM_THREADS=unset, OMP_NUM_THREADS=unset)
    assert all(threads == 1 for _, threads in found["threads"]), found
    assert found["environment"] == {**dict.fromkeys(THREAD_COUNT_VARIABLES), "OPENBLAS_NUM_THREADS": unset,
                                    "OMP_NUM_THREADS": unset}


def test_a_count_set_inside_the_block_is_kept() -> None:
    code = ("from levante_tasks.blas import loaded_without_workers\n"
            "with loaded_without_workers():\n    os.environ['OPENBLAS_NUM_THREADS'] = '3'")
    assert blas_after(code)["environment"]["OPENBLAS_NUM_THREADS"] == "3"


def test_the_environment_is_restored_when_the_block_fails() -> None:
    code = ("from levante_tasks.blas import loaded_without_workers\n"
            "try:\n    with loaded_without_workers():\n        raise KeyError\nexcept KeyError:\n    pass")
    assert blas_after(code)["environment"] == dict.fromkeys(THREAD_COUNT_VARIABLES)


@pytest.mark.parametrize("variable", THREAD_COUNT_VARIABLES)
def test_a_thread_count_the_user_set_is_kept(variable: str) -> None:
    code = ("from levante_tasks.blas import loaded_without_workers\n"
            "with loaded_without_workers():\n    import numpy, scipy.optimize")
    found = blas_after(code, **{variable: "2"})
    assert all(threads == 2 for _, threads in found["threads"]), found
    assert found["environment"] == {**dict.fromkeys(THREAD_COUNT_VARIABLES), variable: "2"}


def test_compare_loads_its_libraries_without_workers(tmp_path: Path) -> None:
    """The command imports its pipeline (numpy, scipy) before it reads a file: a run on missing files fails after
    loading them, which is all this checks."""
    missing = [str(tmp_path / name) for name in ("irt.csv", "trials.csv", "runs.csv", "models.csv")]
    args = ["compare", "--irt", f"trog={missing[0]}", "--trials", missing[1], "--runs", missing[2], "--models",
            missing[3], "--out", str(tmp_path / "out")]
    found = blas_after(f"from levante_tasks.cli import main\nassert main({args!r}) == 2")
    assert len(found["threads"]) == 2 and all(threads == 1 for _, threads in found["threads"]), found
    assert found["environment"] == dict.fromkeys(THREAD_COUNT_VARIABLES), found


def test_prepare_loads_numpy_without_workers(tmp_path: Path) -> None:
    write_release(tmp_path / "rel")
    args = ["prepare", "--release", str(tmp_path / "rel"), "--data-dir", str(tmp_path / "data"), "--quiet"]
    found = blas_after(f"from levante_tasks.cli import main\nassert main({args!r}) == 0")
    assert [name.startswith("libscipy_openblas64_") for name, _ in found["threads"]] == [True], found  # numpy's
    assert found["threads"][0][1] == 1 and found["environment"] == dict.fromkeys(THREAD_COUNT_VARIABLES), found
