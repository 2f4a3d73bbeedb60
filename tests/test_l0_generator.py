"""L0 generator, bins, augment and prompts: the config is honoured, outputs are deterministic and well formed."""

from __future__ import annotations

import ast
import re

import pytest

from levante_tasks.l0 import bins, dataset, prompt
from levante_tasks.l0.config import ConfigError, GenConfig, from_mapping
from levante_tasks.l0.generator import kind_of
from levante_tasks.l0.grammar import BOOL_INPUTS, BOOL_LOCALS, INT_INPUTS, INT_LOCALS, LIST_INPUTS
from levante_tasks.l0.tracer import TracedProgram

SMALL = {"seed": 5, "num_programs": 80, "min_code_lines": 6, "max_code_lines": 20, "max_scope_depth": 2,
         "max_while_loop": 10, "max_trace_steps": 80, "num_bins": 4, "per_bin": 8, "fewshot_pool_size": 5,
         "num_fewshot": 2, "num_voters": 3}


@pytest.fixture(scope="module")
def small() -> tuple[GenConfig, dataset.Generated]:
    config = from_mapping(SMALL)
    return config, dataset.generate(config)


STATEMENT = re.compile(
    r"^(?P<indent>\t+)(?:"
    r"(?P<num>[a-z]) = .+"
    r"|(?P<bool>cond_[a-z]) = .+ [=!]= .+"
    r"|if (?P<if>cond_[a-z]):"
    r"|while (?P<while>cond_[a-z]|True):"
    r"|(?P<list>lst_[a-z])\.(?:append\(.+\)|pop\(\))"
    r"|cnter_\d = (?:0|cnter_\d \+ 2)|cond_[a-z] = cnter_\d != \d+"
    r"|return)$"
)


def test_programs_follow_the_config(small: tuple[GenConfig, dataset.Generated]) -> None:
    config, generated = small
    assert generated.items and generated.stats["accepted"] >= len(generated.items)
    for item in generated.items:
        lines = item["program"].split("\n")
        assert config.min_code_lines < len(lines) < config.max_code_lines == 20
        assert lines[0].startswith("def function(") and lines[-1] == "\treturn"
        for line in lines[1:]:
            match = STATEMENT.match(line)
            assert match, line
            assert len(match["indent"]) - 1 <= config.max_scope_depth
        tree = ast.parse(item["program"])
        read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        params = list(item["inputs"])
        assert params == [a.arg for a in tree.body[0].args.args] and set(params) <= read
        assert set(params) <= set(INT_INPUTS + LIST_INPUTS + BOOL_INPUTS)
        assert [kind_of(p) for p in params] == sorted((kind_of(p) for p in params), key=["int", "list", "bool"].index)
        for name, value in item["inputs"].items():
            if kind_of(name) == "list":
                assert config.min_list_len <= len(value) <= config.max_list_len
                assert all(0 <= v < config.max_num for v in value)
            elif kind_of(name) == "bool":
                assert isinstance(value, bool)
            else:
                assert 0 <= value < config.max_num
        assert {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} <= set(
            INT_INPUTS + INT_LOCALS + BOOL_INPUTS + BOOL_LOCALS + LIST_INPUTS + ("cnter_0", "cnter_1", "True"))
        trace = TracedProgram(item["program"]).run(item["inputs"], config.max_trace_steps)
        assert trace is not None and list(trace.lines) == item["trace"]
        assert item["steps"] == len(item["trace"]) <= config.max_trace_steps
        assert item["truncated"] == trace.truncated
        assert item["id"] == dataset.program_id(item["program"])
    assert len({item["id"] for item in generated.items}) == len(generated.items)


def _reads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _undefined_reads(body: list[ast.stmt], defined: set[str]) -> list[str]:
    """Names read where they are not assigned on every path before (an `if` body may not run; a loop body
    runs at least once), as `line: name`."""
    problems = []
    for node in body:
        reads = _reads(node.test if isinstance(node, (ast.If, ast.While)) else node)
        problems += [f"{node.lineno}: {name}" for name in sorted(reads - defined - {"True"})]
        if isinstance(node, ast.Assign):
            defined.add(node.targets[0].id)
        elif isinstance(node, ast.If):
            problems += _undefined_reads(node.body, set(defined))
        elif isinstance(node, ast.While):
            problems += _undefined_reads(node.body, defined)
    return problems


def test_programs_read_only_variables_defined_on_every_path(small: tuple[GenConfig, dataset.Generated]) -> None:
    _, generated = small
    for item in generated.items:
        function = ast.parse(item["program"]).body[0]
        assert _undefined_reads(function.body, {a.arg for a in function.args.args}) == [], item["program"]


def test_every_statement_kind_appears_and_operations_can_be_restricted(
        small: tuple[GenConfig, dataset.Generated]) -> None:
    _, generated = small
    seen = {kind for item in generated.items for line in item["program"].split("\n")[1:-1]
            for kind, value in STATEMENT.match(line).groupdict().items() if value and kind != "indent"}
    assert seen == {"num", "bool", "if", "while", "list"}
    nested = [item for item in generated.items if "\n\t\t\t" in item["program"]]
    assert nested, "max_scope_depth 2 should give some nested blocks"
    easy = from_mapping({**SMALL, "operations": {"num_assignment": 1, "pop": 1}, "bool_inputs": [0, 0]})
    for item in dataset.generate(easy).items:
        for line in item["program"].split("\n")[1:-1]:
            assert re.match(r"^\t([a-z] = .+|lst_[a-z]\.pop\(\))$", line), line


def test_same_config_same_items_other_seed_other_items(small: tuple[GenConfig, dataset.Generated]) -> None:
    config, generated = small
    assert dataset.generate(config) == generated
    other = dataset.generate(from_mapping({**SMALL, "seed": 6}))
    assert [i["id"] for i in other.items] != [i["id"] for i in generated.items]


def test_bins_follow_the_l0_bench_rule(small: tuple[GenConfig, dataset.Generated]) -> None:
    config, generated = small
    thresholds = generated.stats["thresholds"]
    assert len(thresholds) == config.num_bins - 1
    assert [item["bin"] for item in generated.items] == sorted(item["bin"] for item in generated.items)
    for item in generated.items:
        assert item["bin"] == 1 + sum(t < item["steps"] for t in thresholds)
    assert all(n <= config.per_bin for n in generated.stats["selected_per_bin"].values())
    # By hand: lengths 10..50, 6 bins -> 5 thresholds from 1.5 x 10 = 15 in steps of (0.8 x 50 - 15) / 5 = 5.
    assert bins.auto_thresholds([10, 50, 30], 6) == [15.0, 20.0, 25.0, 30.0, 35.0]
    assert [bins.threshold_bin(n, [15.0, 25.0, 35.0]) for n in (10, 15, 16, 35, 36)] == [1, 1, 2, 3, 4]
    assert bins.auto_thresholds([10, 12], 4) == []  # empty span: everything in bin 1, as upstream
    assert [bins.range_bin(n, [(1, 5), (8, 9)]) for n in (1, 5, 6, 8, 10)] == [1, 1, None, 2, None]


def test_explicit_bin_ranges_stop_drawing_once_full() -> None:
    config = from_mapping({**SMALL, "bin_ranges": [[1, 6], [10, 30]], "per_bin": 3, "num_programs": 5000})
    generated = dataset.generate(config)
    assert generated.stats["selected_per_bin"] == {"1": 3, "2": 3}
    assert generated.stats["accepted"] < 5000
    assert all(lo <= i["steps"] <= hi for i in generated.items for lo, hi in [config.bin_ranges[i["bin"] - 1]])


def test_augment_makes_distinct_executable_demonstrations(small: tuple[GenConfig, dataset.Generated]) -> None:
    config, generated = small
    pools, dropped = dataset.augment(generated.items, config)
    assert [p["id"] for p in pools] == [i["id"] for i in generated.items if i["id"] not in dropped]
    by_id = {i["id"]: i for i in generated.items}
    for pool in pools:
        item = by_id[pool["id"]]
        assert len(pool["inputs"]) == config.fewshot_pool_size
        assert item["inputs"] not in pool["inputs"]
        assert len({repr(sorted(i.items())) for i in pool["inputs"]}) == len(pool["inputs"])
        program = TracedProgram(item["program"])
        for inputs, trace in zip(pool["inputs"], pool["traces"], strict=True):
            assert list(inputs) == list(item["inputs"])
            assert list(program.run(inputs, config.max_trace_steps).lines) == trace
    first_three = {i["id"] for i in generated.items[:3]}
    assert dataset.augment(generated.items[:3], config)[0] == [p for p in pools if p["id"] in first_three]


def test_a_program_without_enough_distinct_inputs_is_dropped() -> None:
    config = from_mapping({**SMALL, "fewshot_pool_size": 2, "num_fewshot": 1, "max_augment_tries": 50})
    item = {"id": "one-bool", "program": "def function(cond_x):\n\tif cond_x:\n\t\ta = 1\n\treturn",
            "inputs": {"cond_x": True}}
    assert dataset.augment_item(item, config) is None  # only cond_x=False is left
    assert dataset.augment([item], config) == ([], ["one-bool"])
    one = dataset.augment_item(item, from_mapping({**SMALL, "fewshot_pool_size": 1, "num_fewshot": 1}))
    assert one == {"id": "one-bool", "inputs": [{"cond_x": False}], "traces": [["L2,", "L4,"]]}


# --- prompts ----------------------------------------------------------------------------------------------------

ITEM = {"id": "p1", "bin": 2, "steps": 3, "truncated": False,
        "program": "def function(x, lst_x):\n\ta = x + 1\n\tlst_x.pop()\n\treturn",
        "inputs": {"x": 2, "lst_x": [4, 5]}, "trace": ["L2,a:3", "L3,lst_x:[4]", "L4,"]}
POOL = {"id": "p1", "inputs": [{"x": 0, "lst_x": [1]}, {"x": 7, "lst_x": [2, 3]}],
        "traces": [["L2,a:1", "L3,lst_x:[]", "L4,"], ["L2,a:8", "L3,lst_x:[2]", "L4,"]]}

# Written out by hand from L0-Bench's default prompt layout.
EXPECTED_PROMPT = (
    "Please execute the following program by outputting a trace of the program execution. The trace should "
    "include the line number, the variable name and the updated value of the variable after executing that "
    "line. Please follow the examples below:\n\n"
    "Program:\n```\nL1 def function(x, lst_x):\nL2 \ta = x + 1\nL3 \tlst_x.pop()\nL4 \treturn\n\n```\n"
    "\nInput:\n```\nfunction(x=7, lst_x=[2, 3])\n```\n\n\nOutput:\n```\nL2,a:8\nL3,lst_x:[2]\nL4,\n```\n\n<|end|>\n"
    "\nInput:\n```\nfunction(x=2, lst_x=[4, 5])\n```\n\n"
    "Please follow the format above and provide the program execution trace starting with ```L2,\n\nOutput:\n"
)


def test_prompt_layout_by_hand() -> None:
    config = from_mapping({**SMALL, "fewshot_pool_size": 2, "num_fewshot": 1, "num_voters": 4})
    docs = prompt.build_docs([ITEM], [POOL], config)
    assert [d["doc_id"] for d in docs] == ["p1#v00", "p1#v01", "p1#v02", "p1#v03"]
    with_second_demo = [d for d in docs if d["demo_indices"] == [1]]
    assert with_second_demo, "some voter should see demonstration 1"
    assert with_second_demo[0]["prompt"] == EXPECTED_PROMPT
    assert {d["target"] for d in docs} == {"L2,a:3\nL3,lst_x:[4]\nL4,"}
    assert {d["input_args"] for d in docs} == {"x=2, lst_x=[4, 5]"}
    assert all(d["bin"] == 2 and d["total_steps"] == 3 and d["item_id"] == "p1" for d in docs)


def test_the_no_program_variant_is_l0_benchs_task_variation_2() -> None:
    # Its template: the instruction, then the same demonstrations of the same program, without the program block.
    config = from_mapping({**SMALL, "fewshot_pool_size": 2, "num_fewshot": 1, "num_voters": 4})
    default, hidden = prompt.build_docs([ITEM], [POOL], config), prompt.build_docs([ITEM], [POOL], config, "no_program")
    program_block = "Program:\n```\nL1 def function(x, lst_x):\nL2 \ta = x + 1\nL3 \tlst_x.pop()\nL4 \treturn\n\n```\n"
    assert [d["prompt"] for d in hidden] == [d["prompt"].replace(program_block, "", 1) for d in default]
    assert hidden[0]["prompt"].startswith(prompt.INSTRUCTION + "\n\n\nInput:\n") and "L1 def" not in hidden[0]["prompt"]
    assert [d["demo_indices"] for d in hidden] == [d["demo_indices"] for d in default]
    with pytest.raises(ValueError, match="unknown prompt variant 'zero_shot'"):
        prompt.render_prompt(ITEM["program"], [], "x=1", "zero_shot")


def test_voters_see_their_own_reproducible_demonstrations() -> None:
    config = from_mapping({**SMALL, "fewshot_pool_size": 16, "num_fewshot": 4, "num_voters": 5})
    draws = [prompt.demo_indices(config, "p1", voter, 16) for voter in range(5)]
    assert draws == [prompt.demo_indices(config, "p1", voter, 16) for voter in range(5)]
    assert all(len(set(d)) == 4 for d in draws) and len({tuple(d) for d in draws}) == 5
    assert prompt.demo_indices(config, "p2", 0, 16) != draws[0]
    assert prompt.build_docs([ITEM], [], config) == []  # a program without demonstrations has no documents


# --- config -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"colour": 1}, "colour: unknown setting"),
        ({"seed": "1"}, "seed: expected an integer"),
        ({"seed": True}, "seed: expected an integer"),
        ({"per_bin": 0}, "per_bin: must be >= 1"),
        ({"int_inputs": [3, 1]}, "int_inputs: min 3 is above max 1"),
        ({"int_inputs": [1, 7]}, "int_inputs: at most 6 parameters"),
        ({"list_inputs": 2}, "list_inputs: expected [min, max]"),
        ({"continue_probability": 1.5}, "continue_probability: expected a number between 0 and 1"),
        ({"operations": {"loop": 1}}, "operations: unknown operation 'loop'"),
        ({"operations": {"if_block": 1}}, "operations: at least one of"),
        ({"operations": {"pop": 1}, "list_inputs": [0, 2]}, "list_inputs: must be at least 1"),
        ({"min_code_lines": 49}, "max_code_lines: must exceed min_code_lines + 1 (50)"),
        ({"num_fewshot": 17}, "num_fewshot: 17 is more than fewshot_pool_size 16"),
        ({"bin_ranges": [[1, 10], [10, 20]]}, "bin_ranges[1]: overlaps"),
        ({"bin_ranges": []}, "bin_ranges: expected a list"),
        ({"max_while_loop": 4}, "max_while_loop: must be >= 5"),
    ],
)
def test_bad_config_values_are_named(change: dict, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        from_mapping(change)
    assert str(info.value).startswith(problem)


def test_config_round_trips_and_hashes_stably() -> None:
    config = from_mapping(SMALL)
    assert from_mapping(config.to_dict()) == config
    assert config.sha256() == from_mapping(dict(reversed(list(SMALL.items())))).sha256()
    assert config.sha256() != from_mapping({**SMALL, "seed": 6}).sha256()
    with pytest.raises(ConfigError, match="expected a mapping"):
        from_mapping(["seed", 1])  # type: ignore[arg-type]
