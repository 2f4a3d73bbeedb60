"""L0 tracer: hand-checked golden traces, and byte-identical generation + traces on every available Python."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from levante_tasks.l0.tracer import ProgramError, TracedProgram, trace_program

REPO = Path(__file__).resolve().parents[1]

LOOP_AND_IF = """\
def function(x, lst_x, cond_x):
\ta = x + 3
\tlst_x.append(a)
\tcnter_0 = 0
\tcond_a = cnter_0 != 4
\twhile cond_a:
\t\tlst_x.pop()
\t\tcnter_0 = cnter_0 + 2
\t\tcond_a = cnter_0 != 4
\tif cond_x:
\t\tb = lst_x[1]
\tcond_b = a == 5
\treturn"""

# Worked by hand: a = 2 + 3; the loop runs for cnter_0 = 0 and 2 (two pops), its test is seen three times;
# lst_x[1] after the pops is 2; a == 5.
LOOP_AND_IF_TRACE = [
    "L2,a:5", "L3,lst_x:[1,2,3,4,5,5]", "L4,cnter_0:0", "L5,cond_a:True",
    "L6,", "L7,lst_x:[1,2,3,4,5]", "L8,cnter_0:2", "L9,cond_a:True",
    "L6,", "L7,lst_x:[1,2,3,4]", "L8,cnter_0:4", "L9,cond_a:False",
    "L6,", "L10,", "L11,b:2", "L12,cond_b:True", "L13,",
]

NEGATIVE_AND_SKIPPED_IF = """\
def function(y, lst_y, cond_y):
\ti = 3 - y
\tcond_y = i == 9
\tif cond_y:
\t\tlst_y.append(i)
\tj = lst_y[y]
\tlst_y.pop()
\ty = j + 0
\treturn"""

# i = 3 - 4 = -1; the input cond_y is overwritten with False, so line 5 never runs; lst_y[4] = 8.
NEGATIVE_AND_SKIPPED_IF_TRACE = [
    "L2,i:-1", "L3,cond_y:False", "L4,", "L6,j:8", "L7,lst_y:[7,0,2,5]", "L8,y:8", "L9,",
]

NESTED_LOOPS = """\
def function(lst_z, cond_z):
\tcnter_0 = 0
\tcond_a = cnter_0 != 4
\twhile cond_a:
\t\tcnter_1 = 0
\t\tcond_b = cnter_1 != 4
\t\twhile cond_b:
\t\t\tlst_z.append(cnter_1)
\t\t\tcnter_1 = cnter_1 + 2
\t\t\tcond_b = cnter_1 != 4
\t\tif cond_z:
\t\t\tlst_z.pop()
\t\tcnter_0 = cnter_0 + 2
\t\tcond_a = cnter_0 != 4
\treturn"""


def _outer_iteration(before: str, after_inner: str, after_pop: str, cnter_0: int) -> list[str]:
    """One pass of the outer loop body: the inner loop appends 0 then 2, the if pops the 2."""
    return [
        "L5,cnter_1:0", "L6,cond_b:True",
        "L7,", f"L8,lst_z:{before}", "L9,cnter_1:2", "L10,cond_b:True",
        "L7,", f"L8,lst_z:{after_inner}", "L9,cnter_1:4", "L10,cond_b:False",
        "L7,", "L11,", f"L12,lst_z:{after_pop}", f"L13,cnter_0:{cnter_0}", f"L14,cond_a:{cnter_0 != 4}",
    ]


NESTED_LOOPS_TRACE = [
    "L2,cnter_0:0", "L3,cond_a:True", "L4,",
    *_outer_iteration("[1,0]", "[1,0,2]", "[1,0]", 2), "L4,",
    *_outer_iteration("[1,0,0]", "[1,0,0,2]", "[1,0,0]", 4), "L4,",
    "L15,",
]

WHILE_TRUE = "def function(x):\n\twhile True:\n\t\tx = x + 1\n\treturn"
POPS = "def function(lst_x):\n\tlst_x.pop()\n\tlst_x.pop()\n\treturn"


@pytest.mark.parametrize(
    ("source", "inputs", "expected"),
    [
        (LOOP_AND_IF, {"x": 2, "lst_x": [1, 2, 3, 4, 5], "cond_x": True}, LOOP_AND_IF_TRACE),
        (LOOP_AND_IF, {"x": 2, "lst_x": [1, 2, 3, 4, 5], "cond_x": False},
         [line for line in LOOP_AND_IF_TRACE if not line.startswith("L11,")]),
        (NEGATIVE_AND_SKIPPED_IF, {"y": 4, "lst_y": [7, 0, 2, 5, 8], "cond_y": True}, NEGATIVE_AND_SKIPPED_IF_TRACE),
        (NESTED_LOOPS, {"lst_z": [1], "cond_z": True}, NESTED_LOOPS_TRACE),
        (POPS, {"lst_x": [5, 6]}, ["L2,lst_x:[5]", "L3,lst_x:[]", "L4,"]),
    ],
    ids=["loop-and-if", "if-false", "negative-skipped-if", "nested-loops", "pops"],
)
def test_golden_traces(source: str, inputs: dict, expected: list[str]) -> None:
    trace = trace_program(source, inputs, max_steps=500)
    assert trace is not None
    assert list(trace.lines) == expected
    assert trace.truncated is False


def test_trace_stops_after_max_steps_and_says_so() -> None:
    trace = trace_program(WHILE_TRUE, {"x": 0}, max_steps=7)
    assert trace is not None and trace.truncated
    assert list(trace.lines) == ["L2,", "L3,x:1", "L2,", "L3,x:2", "L2,", "L3,x:3", "L2,"]
    full = trace_program(LOOP_AND_IF, {"x": 2, "lst_x": [1, 2, 3, 4, 5], "cond_x": True}, max_steps=17)
    assert full is not None and not full.truncated  # exactly max_steps lines is a complete trace


# Written by L0-Bench's own generator (@a722bac, Python 3.12.1) from a grammar override that uses its words `<`,
# `>` and `len(` (no such program is in shared/l0-upstream): an `.append` line that reads two lists shows both,
# parameters in signature order.
UPSTREAM_LEN_PROGRAM = ("def function(u, lst_w, lst_v, cond_y):\n\tif cond_y: \n\t\tlst_v.pop()\n\ta = lst_w[1]\n"
                        "\tx = 1\n\tif cond_y: \n\t\tlst_w.append(len(lst_v))\n\t\tcond_z = len(lst_w) < u\n"
                        "\tif cond_y: \n\t\tlst_w.append(len(lst_v))\n\treturn")
UPSTREAM_LEN_INPUTS = {"u": 0, "lst_w": [3, 5, 7, 2, 3], "lst_v": [5, 5, 9, 3, 5, 8], "cond_y": True}
UPSTREAM_LEN_TRACE = ["L2,", "L3,lst_v:[5,5,9,3,5]", "L4,a:5", "L5,x:1", "L6,",
                      "L7,lst_w:[3,5,7,2,3,5],lst_v:[5,5,9,3,5]", "L8,cond_z:False", "L9,",
                      "L10,lst_w:[3,5,7,2,3,5,5],lst_v:[5,5,9,3,5]", "L11,"]


def test_less_greater_and_len_trace_as_l0_benchs_tracer() -> None:
    for rule in ("upstream", "exact"):
        assert list(trace_program(UPSTREAM_LEN_PROGRAM, UPSTREAM_LEN_INPUTS, 100, rule).lines) == UPSTREAM_LEN_TRACE


@pytest.mark.parametrize(("statement", "line"), [
    ("a = len(lst_x) < x", "L2,a:True"),  # a comparison's value is a bool
    ("cond_a = 1 < x < 3", "L2,cond_a:True"),  # chains run as Python runs them
    ("cond_a = x > 2 != 1", "L2,cond_a:False"),
    ("lst_x.append(len(lst_x))", "L2,lst_x:[7,1]"),  # one variable read: shown
    ("p.append(x)", "L2,"),  # two read, neither named lst: L0-Bench prints none
    ("lst_y = lst_x", "L2,lst_y:[7]"),
])
def test_shown_variables_follow_l0_benchs_rule(statement: str, line: str) -> None:
    # Each line is what L0-Bench's tracer (@a722bac, Python 3.12.1) prints for the statement, spaces removed.
    source = f"def function(x, lst_x, p):\n\t{statement}\n\treturn"
    assert trace_program(source, {"x": 2, "lst_x": [7], "p": [1]}, 10, "upstream").lines[0] == line


def test_a_run_that_raises_has_no_trace_and_inputs_are_not_changed() -> None:
    program = TracedProgram(POPS)
    assert program.run({"lst_x": [5]}, 100) is None  # pop from an empty list
    inputs = {"lst_x": [5, 6]}
    assert program.run(inputs, 100) is not None
    assert inputs == {"lst_x": [5, 6]}


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("def function(x):\n\tfor i in x:\n\t\tpass\n\treturn", "line 2: unsupported statement `For`"),
        ("def function(x):\n\ta, b = x, x\n\treturn", "line 2: only `<name> = <expression>`"),
        ("def function(x):\n\tif x:\n\t\ta = 1\n\telse:\n\t\ta = 2\n\treturn", "line 2: unsupported statement `If`"),
        ("def other(x):\n\treturn", "expected exactly one `def function(...)`"),
        ("def function(x=1):\n\treturn", "line 1: parameters must be plain names"),
        ("def function(x):\n\t_l0_event = 1\n\treturn", "`_l0_event`: names starting with _l0 are reserved"),
        ("def function(x):\n\treturn x +", "line 2: invalid syntax"),
    ],
)
def test_programs_outside_the_grammar_are_refused(source: str, problem: str) -> None:
    with pytest.raises(ProgramError) as info:
        TracedProgram(source)
    assert str(info.value).startswith(problem)


@pytest.mark.parametrize(
    ("statement", "node"),
    [
        ("a = ().__class__", "Attribute"),
        ("a = f(x)", "Call"),
        ("a = x * 2", "Mult"),
        ("a = x <= 2", "LtE"),
        ("a = 1 < x in lst_x", "In"),
        ("a = len(x, x)", "Call"),
        ("a = lst_x.pop()", "Call"),
        ("a = 'text'", "Constant 'text'"),
        ("a = [x]", "List"),
        ("lst_x.append(x.real)", "Attribute"),
        ("lst_x.pop(0)", "arguments to pop"),
        ("if x.bit_length():\n\t\ta = 1", "Call"),
    ],
)
def test_expressions_outside_the_grammar_are_refused(statement: str, node: str) -> None:
    # Programs from a dataset folder are executed by `augment`: only the grammar's expressions may run.
    with pytest.raises(ProgramError, match=re.escape(f"line 2: unsupported expression `{node}`")):
        TracedProgram(f"def function(x, lst_x):\n\t{statement}\n\treturn")


def test_inputs_must_match_the_parameters() -> None:
    with pytest.raises(ProgramError, match="do not match the parameters"):
        TracedProgram(POPS).run({"lst_y": [1]}, 10)


# --- the same bytes on every interpreter -------------------------------------------------------------------------

# Runs with `python -S` (no site-packages): the generator, tracer, augment and prompt modules must need only the
# standard library. Prints every item, pool, document and golden trace as JSON.
PAYLOAD = """
import json, sys
from levante_tasks.l0.config import from_mapping
from levante_tasks.l0 import dataset, prompt
from levante_tasks.l0.tracer import trace_program
config = from_mapping({"seed": 11, "num_programs": 40, "min_code_lines": 6, "max_code_lines": 24,
                       "max_scope_depth": 2, "while_true_probability": 0.2, "max_while_loop": 12,
                       "max_trace_steps": 120, "num_bins": 3, "per_bin": 6, "fewshot_pool_size": 4,
                       "num_fewshot": 2, "num_voters": 2})
generated = dataset.generate(config)
pools, dropped = dataset.augment(generated.items, config)
docs = prompt.build_docs(generated.items, pools, config)
goldens = [list(trace_program(src, inp, 500).lines) for src, inp in json.loads(sys.argv[1])]
json.dump({"items": generated.items, "stats": generated.stats, "pools": pools, "dropped": dropped,
           "docs": docs, "goldens": goldens}, sys.stdout, sort_keys=True)
"""


def interpreters() -> list[str]:
    """Every Python 3.10+ found here (pyenv versions, pythonX.Y on PATH), plus the one running the tests."""
    found = {os.path.realpath(sys.executable): sys.executable}
    candidates = glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python"))
    candidates += [shutil.which(f"python3.{minor}") or "" for minor in range(10, 15)]
    for path in filter(None, candidates):
        found.setdefault(os.path.realpath(path), path)
    return sorted(found.values())


def _version(python: str) -> tuple[int, int] | None:
    """(major, minor) of an interpreter, or None when it does not run (e.g. a pyenv shim with no version set)."""
    out = subprocess.run([python, "-S", "-c", "import sys; print(*sys.version_info[:2])"],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return None
    major, minor = out.stdout.split()
    return int(major), int(minor)


def test_generation_and_traces_are_identical_on_every_python_and_hash_seed() -> None:
    goldens = json.dumps([
        [LOOP_AND_IF, {"x": 2, "lst_x": [1, 2, 3, 4, 5], "cond_x": True}],
        [NESTED_LOOPS, {"lst_z": [1], "cond_z": True}],
    ])
    runs = {}
    for python in interpreters():
        found = _version(python)
        if found is None or found < (3, 10):
            continue
        version = f"{found[0]}.{found[1]}"
        for hash_seed in ("1", "2"):
            env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": hash_seed}
            out = subprocess.run([python, "-S", "-c", PAYLOAD, goldens], capture_output=True, text=True, env=env,
                                 cwd=REPO, timeout=120)
            assert out.returncode == 0, f"{python}: {out.stderr}"
            runs[f"{version} (PYTHONHASHSEED={hash_seed})"] = out.stdout
    print("compared:", ", ".join(sorted(runs)))
    reference = runs[next(iter(runs))]
    data = json.loads(reference)
    assert data["goldens"] == [LOOP_AND_IF_TRACE, NESTED_LOOPS_TRACE]
    assert len(data["items"]) >= 6 and data["docs"]
    assert any("while True" in item["program"] for item in data["items"])
    for name, output in runs.items():
        assert output == reference, f"{name} differs from {next(iter(runs))}"
