"""Profile upstream against L0-Bench itself: data made by its own generator (shared/l0-upstream) and its rules.

shared/l0-upstream holds programs, inputs, traces and demonstrations that L0-Bench's generator
(SimengSun/L0-reasoning-bench @ a722bac, Python 3.12) wrote for its `example_easy` config with
sample_bin_limit 10 and num_processes 2 (settings.json). Under profile upstream we must give the same bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from faults import one_error_line
from l0_paper import run_paper_group
from shared_paths import shared_dir

from levante_tasks.cli import main
from levante_tasks.l0 import aggregate, backends, budget, store, task, upstream, upstream_aggregate
from levante_tasks.l0.config import ConfigError, from_mapping
from levante_tasks.l0.config_file import load_config
from levante_tasks.l0.tracer import TracedProgram
from levante_tasks.schema.task_source import TASKS_DIR
from levante_tasks.yaml_file import read_yaml

REFERENCE = (shared_dir() or Path("no-shared-folder")) / "l0-upstream"  # ../shared beside the checkout
CONFIGS = Path(task.__file__).resolve().parent / "configs" / "upstream"
needs_reference = pytest.mark.skipif(not REFERENCE.is_dir(), reason="shared/l0-upstream is not available")


def raw_to_target(raw: list[str]) -> list[str]:
    """L0-Bench's own conversion of a raw trace (`<step>,<line>,<vars>`) to target lines, written from its rule:
    drop the call and return lines, `L<line>,<key>:<value without spaces>` or `L<line>,`."""
    lines = []
    for entry in raw[1:-1]:
        _, line, state = entry.split(",", 2)
        key_value = state.split(":")
        lines.append(f"L{line}," if len(key_value) == 1 else f"L{line},{key_value[0]}:{key_value[1].replace(' ', '')}")
    return lines


def _rows(name: str) -> list[dict[str, Any]]:
    with gzip.open(REFERENCE / name, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Our `l0 generate` on the reference settings: L0-Bench's example_easy, 10 per bin, 2 workers; the pool of
    every accepted program it drew (`upstream.draw_pool`'s file, which it spools in a temporary folder) is kept
    beside the data as `pool.jsonl`."""
    root = tmp_path_factory.mktemp("l0up")
    text = (CONFIGS / "example_easy.yaml").read_text(encoding="utf-8")
    text = text.replace("sample_bin_limit: 500", "sample_bin_limit: 10").replace("num_processes: 32",
                                                                                 "num_processes: 2")
    (root / "easy.yaml").write_text(text, encoding="utf-8")
    draw_pool = upstream.draw_pool

    def kept(*args: Any, **kwargs: Any) -> upstream.Pool:
        pool = draw_pool(*args, **kwargs)
        shutil.copyfile(pool.path, root / "pool.jsonl")
        return pool

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(upstream, "draw_pool", kept)
        assert main(["l0", "generate", "--config", str(root / "easy.yaml"), "--out", str(root / "data")]) == 0
    return root / "data"


@needs_reference
def test_settings_are_the_reference_settings(generated: Path) -> None:
    settings = json.loads((REFERENCE / "settings.json").read_text(encoding="utf-8"))["config"]["settings"]
    ours = read_yaml(generated.parent / "easy.yaml")
    assert {k: v for k, v in ours.items() if k != "output_path"} == {
        k: v for k, v in settings.items() if k != "output_path"}


@needs_reference
def test_programs_traces_bins_and_demonstrations_equal_upstreams(generated: Path) -> None:
    manifest = store.read_manifest(generated)
    assert manifest["config"]["profile"] == "upstream" and manifest["stats"]["accepted"] == 2000
    items = store.read_rows(generated, manifest, store.PROGRAMS)
    pools = {row["id"]: row for row in store.read_rows(generated, manifest, store.FEWSHOTS)}
    reference = _rows("fid_easy.jsonl.gz")
    tests = [r for r in reference if r["kind"] == "test"]
    assert [(i["id"], i["bin"]) for i in items] == [(r["id"], r["bin"]) for r in tests]
    for item, ref in zip(items, tests, strict=True):
        assert item["program"] == ref["program"] and item["inputs"] == ref["inputs"][0]
        assert item["trace"] == raw_to_target(ref["traces"][0])
    fewshots = [r for r in reference if r["kind"] == "fewshot"]
    assert sorted(pools) == sorted(r["id"] for r in fewshots) and manifest["augment"]["dropped"] == []
    for ref in fewshots:
        assert pools[ref["id"]]["inputs"] == ref["inputs"]
        assert pools[ref["id"]]["traces"] == [raw_to_target(t) for t in ref["traces"]]
    # Programs that were not sampled: their traces too (our tracer under L0-Bench's step counter).
    for ref in (r for r in reference if r["kind"] == "pool"):
        trace = TracedProgram(ref["program"]).run(ref["inputs"][0], 100, "upstream")
        assert trace is not None and list(trace.lines) == raw_to_target(ref["traces"][0])


@needs_reference
def test_every_generated_program_in_order(generated: Path) -> None:
    """The pool `l0 generate` drew (every accepted program, in L0-Bench's data-file order; the same for any --jobs:
    tests/test_l0_memory.py) is L0-Bench's own."""
    with (generated.parent / "pool.jsonl").open("rb") as handle:
        pool = [json.loads(line) for line in handle]
    reference = _rows("fid_easy.programs.jsonl.gz")
    assert [p["id"] for p in pool] == [r["id"] for r in reference]
    assert [p["inputs"] for p in pool] == [r["inputs"] for r in reference]
    assert [p["steps"] + 2 for p in pool] == [r["raw_len"] for r in reference]  # + call and return events


def test_every_shipped_upstream_config_is_read_unchanged() -> None:
    names = sorted(p.name for p in CONFIGS.glob("*.yaml"))
    assert names == ["example.yaml", "example_easy.yaml", "example_eval_maxtrace1k.yaml",
                     "example_train_maxtrace150.yaml"]
    example = load_config(CONFIGS / "example.yaml")
    assert (example.profile, example.num_programs, example.per_bin, example.num_bins) == ("upstream", 80000, 2200, 10)
    assert (example.fewshot_pool_size, example.num_fewshot, example.num_voters) == (64, 4, 31)  # the paper's @31
    wide = load_config(CONFIGS / "example_eval_maxtrace1k.yaml")
    assert wide.upstream is not None and "cond_n" in wide.upstream["overwritten_terminal"]
    assert from_mapping(example.to_dict()) == example  # the manifest's copy reads back as the same config


@pytest.mark.parametrize(("change", "problem"), [
    ({"colour": "red"}, "colour: unknown setting in an L0-Bench generator config"),
    ({"actions": ["augment"]}, "actions: ['augment']: a dataset folder needs generate then sample"),
    ({"grammar_ver": "grammar_v9"}, "grammar_ver: unknown grammar 'grammar_v9'"),
    ({"num_inputs_per_program": 2}, "num_inputs_per_program: only 1 is supported"),
    ({"overwritten_grammar": "<stmt> <list_op>"}, "overwritten_grammar: rule 1 is not `<symbol> ::= alternatives`"),
    ({"num_processes": None}, "num_processes: missing (L0-Bench's generator needs it)"),
])
def test_upstream_config_errors_are_named(change: dict, problem: str) -> None:
    data = {**read_yaml(CONFIGS / "example_easy.yaml"), **change}
    data = {k: v for k, v in data.items() if v is not None}
    with pytest.raises(ConfigError, match="^" + re.escape(problem)):
        from_mapping(data)


# L0-Bench's generator (@a722bac, Python 3.12.1, example_easy with these changes) drew 40 programs from a grammar
# whose expressions use its words `<`, `>` and `len(`; shared/l0-upstream holds no such grammar, so digests of its
# data file's ids, inputs (keys sorted) and target traces are kept here.
LEN_COMPARE = {"generate_limit": 40, "sample_bin_limit": 20, "num_processes": 2, "overwritten_terminal": "",
               "overwritten_grammar": "<list_op> ::= <list_var> .append( len( <list_var> ) ) | <list_var> .append( "
                                      "<operand> ) | <list_var> .pop() @@ <bool_expr> ::= <operand> > <number> | "
                                      "len( <list_var> ) < <operand> | <operand> < <operand> < <number>"}
LEN_COMPARE_DIGESTS = ("fe76d6e6a2acd22288e561ac30eb4b00ec0fc344a43f6b192695692fdac54488",
                       "00e88b2f4eb47759b1ac33c0d4fe9bd9a9d182f5a568c389214753426a8dddf2",
                       "e0d7c36eea0f15b1870be4447a359a9efa0dd341506ca557346aedd343609076")


def _easy_yaml(folder: Path, name: str, **changes: object) -> Path:
    """L0-Bench's example_easy.yaml with some settings changed, written as `name` in `folder`."""
    path = folder / name
    path.write_text(json.dumps({**read_yaml(CONFIGS / "example_easy.yaml"), **changes}), encoding="utf-8")
    return path


def _digest(value: object) -> str:
    return hashlib.sha256(value.encode() if isinstance(value, str) else json.dumps(value, sort_keys=True).encode()
                          ).hexdigest()


def test_less_greater_and_len_overrides_give_l0_benchs_programs(tmp_path: Path) -> None:
    config = _easy_yaml(tmp_path, "len.yaml", **LEN_COMPARE)
    pool = list(upstream.draw_pool(load_config(config), tmp_path).rows())
    assert (_digest("\n".join(p["id"] for p in pool)), _digest([p["inputs"] for p in pool]),
            _digest([p["trace"] for p in pool])) == LEN_COMPARE_DIGESTS
    assert main(["l0", "generate", "--config", str(config), "--out", str(tmp_path / "d"), "--jobs", "2"]) == 0
    assert any("len(" in json.loads(row)["program"] for row in (tmp_path / "d" / store.PROGRAMS).open())
    unused = f"{LEN_COMPARE['overwritten_grammar']} @@ <never_read> ::= abs( <var> )"  # L0-Bench never expands it
    load_config(_easy_yaml(tmp_path, "unused.yaml", **{**LEN_COMPARE, "overwritten_grammar": unused}))


@pytest.mark.parametrize(("change", "problem"), [
    ({"overwritten_grammar": "<expr> ::= <operand> | abs( <var> )"},
     "bad.yaml: overwritten_grammar: <expr> ::= abs( <var> ): `abs(` is neither a symbol with a rule or terminals "
     "nor a word L0-Bench's generator knows"),
    ({"overwritten_grammar": "<stmt> ::= <assignment> | <loop>"}, "bad.yaml: overwritten_grammar: <stmt> ::= <loop>"),
    ({"overwritten_terminal": "<number> ::= 1.5 | 2"},
     "bad.yaml: overwritten_terminal: <number> ::= 1.5: input values are drawn from <number>"),
    ({"overwritten_grammar": "<expr> ::= <list_var> .pop()", "overwritten_terminal": ""},
     "bad.yaml: overwritten_grammar / overwritten_terminal: a drawn program has the line `"),
])
def test_overrides_l0_bench_cannot_run_or_we_cannot_trace_are_refused(change: dict, problem: str, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture) -> None:
    config = _easy_yaml(tmp_path, "bad.yaml", **{**LEN_COMPARE, **change})  # --jobs 2: raised in a worker process
    assert main(["l0", "generate", "--config", str(config), "--out", str(tmp_path / "d"), "--jobs", "2"]) == 2
    assert problem in one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "d").exists()


# --- step limit ---------------------------------------------------------------------------------------------
POPS = "def function(lst_x):\n" + "\tlst_x.pop()\n" * 6 + "\treturn"  # 7 target lines when the list holds 6


@pytest.mark.parametrize(("max_steps", "expected"), [
    (9, 7),  # 7 lines <= max - 1: whole
    (8, 7),  # 7 = max - 1: still whole (the return event is the max-th event)
    (7, 5),  # exactly max lines: cut by 2
    (5, 3),  # longer: max - 2
])
def test_upstream_step_counter(max_steps: int, expected: int) -> None:
    program = TracedProgram(POPS)
    trace = program.run({"lst_x": list(range(6))}, max_steps, "upstream")
    assert trace is not None and len(trace.lines) == expected and trace.truncated == (expected < 7)
    exact = program.run({"lst_x": list(range(6))}, max_steps, "exact")
    assert exact is not None and len(exact.lines) == min(7, max_steps)


def test_a_run_that_raises_at_the_limit_is_kept_upstream() -> None:
    program = TracedProgram(POPS)
    short = {"lst_x": [1, 2, 3]}  # the 4th pop raises; it is line event 4, its frame's return event is 5
    assert program.run(short, 6, "upstream") is None  # both events before the limit: rejected
    at_return = program.run(short, 5, "upstream")  # the return event passes the limit: kept, failed line shown
    assert at_return is not None and at_return.truncated
    assert at_return.lines == ("L2,lst_x:[1,2]", "L3,lst_x:[1]", "L4,lst_x:[]", "L5,lst_x:[]")
    kept = program.run(short, 4, "upstream")  # L0-Bench stops at event 4 before the pop runs: kept, cut
    assert kept is not None and kept.truncated and kept.lines == ("L2,lst_x:[1,2]", "L3,lst_x:[1]")
    assert program.run(short, 4, "exact") is None  # our definition: a run that raises has no trace


# --- aggregation --------------------------------------------------------------------------------------------
TARGET = "L2,a:1\nL3,\nL4,b:[1,2]"


def _records(answers: dict[str, dict[int, str]], profile: str = "upstream") -> list[dict[str, Any]]:
    out = []
    for item, by_voter in answers.items():
        for voter, response in by_voter.items():
            doc = {"item_id": item, "voter": voter, "target": TARGET, "profile": profile}
            out.append(task.process_results(doc, [response])["l0_trace_acc"])
    return out


GOOD = "L2,a:1\nL3,\nL4,b:[1,2]"
SPACED = "L2,a:1\n\nL3,\nL4,b:[1, 2]"  # correct, but a different string: a separate vote upstream
WRONG = "L2,a:1\nL3,\nL4,b:[2,1]"  # 2 steps


def test_empty_responses_drop_the_item_from_every_metric() -> None:
    answers = {"p": {0: GOOD, 1: GOOD}, "q": {0: WRONG, 1: ""}}
    records = _records(answers)
    assert aggregate.trace_acc(records) == 1.0 and aggregate.steps(records) == 3.0  # q is gone
    default = _records(answers, "default")
    assert aggregate.trace_acc(default) == 0.5 and aggregate.steps(default) == (3 + 3 + 2 + 0) / 4


def test_dropped_programs_are_counted_per_bin_and_too_few_is_said() -> None:
    # 20 programs x 10 voters with 10% empty answers, one per program for 18 of them: 2 of 20 programs remain.
    answers = {f"p{i}": {v: ("" if v == i % 10 and i < 18 else GOOD) for v in range(10)} for i in range(20)}
    records = _records(answers)
    assert aggregate.program_counts(records) == (20, 2)
    assert aggregate.programs(records) == 20 and aggregate.programs_dropped(records) == 18
    assert aggregate.too_few(20, 2) and aggregate.trace_acc(records) == 1.0  # a number, resting on 2 programs
    everyone = _records({"p": {0: "", 1: ""}, "q": {0: "", 1: ""}})  # every answer empty: NaN, both dropped
    assert math.isnan(aggregate.trace_acc(everyone)) and aggregate.programs_dropped(everyone) == 2
    assert aggregate.programs_dropped(_records(answers, "default")) == 0  # the default profile scores empties 0
    assert not aggregate.too_few(100, 90) and aggregate.too_few(100, 89) and aggregate.too_few(29, 29)


def test_voters_in_string_order_and_exact_string_votes() -> None:
    # 11 voters; upstream's first 5 are voter_0, voter_1, voter_10, voter_2, voter_3.
    answers = {"p": {v: WRONG for v in range(11)}}
    answers["p"].update({0: GOOD, 1: GOOD, 10: GOOD})
    records = _records(answers)
    assert [str(v) for v in sorted(range(11), key=upstream_aggregate.voter_order)][:5] == ["0", "1", "10", "2", "3"]
    assert aggregate.maj_at_5_acc(records) == 1.0  # GOOD x3 among voters 0, 1, 10, 2, 3
    assert aggregate.maj_at_5_acc(_records(answers, "default")) == 0.0  # numeric order: 0..4 -> WRONG x3
    # Exact strings: two correct-but-different answers do not join up upstream, they do in the default.
    split = {"p": {0: GOOD, 1: SPACED, 2: WRONG, 3: WRONG, 4: SPACED.replace("[1, 2]", "[1,2]")}}
    assert aggregate.maj_at_5_acc(_records(split)) == 0.0 and aggregate.maj_at_5_steps(_records(split)) == 2.0
    assert aggregate.maj_at_5_acc(_records(split, "default")) == 1.0


def test_upstream_ties_go_to_the_answer_first_in_string_order_of_voters() -> None:
    # 12 voters; upstream's first 7 are voter_0, voter_1, voter_10, voter_11, voter_2, voter_3, voter_4.
    # GOOD (voter 10, voter 4) and WRONG (voters 2, 3) tie at two votes; every other answer differs.
    answers = {"p": {v: f"L2,a:{v + 10}" for v in range(12)}}
    answers["p"].update({10: GOOD, 4: GOOD, 2: WRONG, 3: WRONG})
    records = _records(answers)
    group = upstream_aggregate.complete_items(records)[1][0]
    assert [r["voter"] for r in group[:7]] == [0, 1, 10, 11, 2, 3, 4]
    assert upstream_aggregate.winner(group, 7)["voter"] == 10  # voter_10 is read before voter_2
    assert aggregate.majority_accuracy(records, 7) == 1.0
    # The default profile votes voters 0..6 by number: WRONG (voters 2, 3) beats GOOD (voter 4).
    assert aggregate.majority_accuracy(_records(answers, "default"), 7) == 0.0


def test_at_5_15_31_with_31_voters_match_upstreams_formula() -> None:
    answers = {"p": {v: (GOOD if v in (3, 30) else WRONG) for v in range(31)},
               "q": {v: GOOD for v in range(31)}}
    records = _records(answers)
    # By hand: p has c = 2 of n = 31; pass@k = 1 - prod_{j=30}^{31} (1 - k/j).
    for k, metric in ((5, aggregate.pass_at_5), (15, aggregate.pass_at_15), (31, aggregate.pass_at_31)):
        expected_p = 1.0 if 31 - 2 < k else 1 - (1 - k / 30) * (1 - k / 31)
        assert metric(records) == pytest.approx((expected_p + 1.0) / 2, abs=1e-15)
    assert aggregate.maj_at_31_acc(records) == 0.5 and aggregate.maj_at_31_steps(records) == 2.5
    assert aggregate.maj_at_15_acc(records) == 0.5
    assert aggregate.trace_acc(records) == pytest.approx((2 / 31 + 1) / 2)
    assert math.isnan(aggregate.maj_at_31_acc(_records({"p": {v: GOOD for v in range(5)}})))  # k > voters


# --- budgets ------------------------------------------------------------------------------------------------
def test_budget_rule_by_hand() -> None:
    lines = ["L2,a:1", "L3,"]  # formatted "L2,a:1\nL3,\n"; [1:-1] = "2,a:1\nL3," (9 chars) -> 17 joined
    assert budget.token_budget(lines, "p") == 17 + 200
    assert budget.token_budget(lines, "p" * 100, thinking=True) == 217 * 20
    assert budget.token_budget(lines, "p" * 16000, thinking=True) == 32768 - 32000
    assert budget.token_budget(lines, "p" * 20000, thinking=True) == 32768  # negative cap -> max_seq_len


def test_every_document_gets_a_budget_a_perfect_model_fits_in(generated: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(task.DATA_ENV, str(generated))
    docs = task.with_budgets(task.load_bin_docs(2))
    assert len(docs) == 9 * 31 and {d["profile"] for d in docs} == {"upstream"}
    assert all(len(d["target"]) < d["max_new_tokens"] for d in docs)
    monkeypatch.setenv(task.THINKING_ENV, "yes")
    with pytest.raises(task.LevanteError, match=r"\$LEVANTE_L0_THINKING: expected 0 or 1, got 'yes'"):
        task.budget_settings()


def test_the_prompt_variant_comes_from_the_environment(generated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(task.DATA_ENV, str(generated))
    shown = task.load_bin_docs(1)
    monkeypatch.setenv(task.PROMPT_ENV, "no_program")
    hidden = task.load_bin_docs(1)
    assert all("\nProgram:\n" in d["prompt"] for d in shown) and not any("\nProgram:\n" in d["prompt"] for d in hidden)
    assert [d["target"] for d in hidden] == [d["target"] for d in shown] and task.prompt_variant() == "no_program"
    monkeypatch.setenv(task.PROMPT_ENV, "zero_shot_v1")
    with pytest.raises(task.LevanteError, match=r"^\$LEVANTE_L0_PROMPT: expected one of default, no_program, got "):
        task.load_bin_docs(1)


def test_generate_refuses_what_l0_bench_cannot_bin(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    text = (CONFIGS / "example_easy.yaml").read_text(encoding="utf-8").replace("num_bins: 2", "num_bins: 1")
    text = text.replace("generate_limit: 2000", "generate_limit: 4")
    (tmp_path / "one.yaml").write_text(text, encoding="utf-8")
    assert main(["l0", "generate", "--config", str(tmp_path / "one.yaml"), "--out", str(tmp_path / "d")]) == 2
    assert "one.yaml: num_bins: L0-Bench's sample step divides by num_bins - 1" in one_error_line(
        capsys.readouterr().err)
    assert not (tmp_path / "d").exists()


def test_lmms_eval_reports_upstreams_aggregation_and_the_profile(generated: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_eval import evaluator
    from lmms_eval.api.model import lmms
    from lmms_eval.tasks import TaskManager

    first: list[str] = []

    class Oracle(lmms):
        """Correct for even voters, a wrong last line for odd ones, and nothing from voter 7 of the first program."""

        def generate_until(self, requests: list[Any]) -> list[str]:
            out = []
            for request in requests:
                _, _, _, doc_id, task_name, split = request.args
                doc = self.task_dict[task_name][split][doc_id]
                first.append(first[0] if first else doc["item_id"])
                lines = doc["target"].split("\n")
                if doc["item_id"] == first[0] and doc["voter"] == 7:
                    out.append("")
                else:
                    out.append(doc["target"] if doc["voter"] % 2 == 0 else "\n".join([*lines[:-1], "L99,"]))
            return out

        def loglikelihood(self, requests: list[Any]) -> list[Any]:
            raise NotImplementedError

        def generate_until_multi_round(self, requests: list[Any]) -> list[Any]:
            raise NotImplementedError

    monkeypatch.setenv(task.DATA_ENV, str(generated))
    manager = TaskManager(include_path=str(TASKS_DIR),
                          include_defaults=False)
    out = evaluator.simple_evaluate(model=Oracle(), tasks=["l0_trace_bin2"], task_manager=manager, log_samples=True)
    assert out["configs"]["l0_trace_bin2"]["metadata"]["l0"]["profile"] == "upstream"
    assert out["configs"]["l0_trace_bin2"]["metadata"]["l0"]["prompt"] == "default"
    row = out["results"]["l0_trace_bin2"]
    # By hand: the first program lacks voter 7 and is dropped everywhere; 8 programs x 31 voters remain,
    # 16 of 31 voters correct; votes of the first k in voter_0, voter_1, voter_10, ... order.
    assert row["l0_trace_acc,none"] == pytest.approx(16 / 31)
    assert row["l0_programs,none"] == 9 and row["l0_programs_dropped,none"] == 1
    first5 = sorted(range(31), key=str)[:5]  # 0, 1, 10, 11, 12: 3 even -> correct wins
    assert sum(v % 2 == 0 for v in first5) == 3 and row["l0_maj_at_5_acc,none"] == 1.0
    assert row["l0_maj_at_15_acc,none"] == 1.0 and row["l0_maj_at_31_acc,none"] == 1.0
    assert row["l0_pass_at_5,none"] == pytest.approx(1 - math.prod(1 - 5 / j for j in range(16, 32)))  # n-c = 15
    records = [s["l0_trace_acc"] for s in out["samples"]["l0_trace_bin2"]]
    assert row["l0_pass_at_15,none"] == pytest.approx(aggregate.pass_at_15(records))
    assert row["l0_pass_at_15,none"] == pytest.approx(1 - math.prod(1 - 15 / j for j in range(16, 32)))


def test_paper_group_runs_unlabelled_on_upstream_profile_data(generated: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(task.DATA_ENV, str(generated))
    out, table = run_paper_group(tmp_path, {1: 1, 3: 2})  # the reference data has two bins
    for name in ("l0_trace_bin1", "l0_trace_bin2"):
        config = out["configs"][name]
        assert config["metadata"]["l0"]["comparable_with_paper"] is True and config.get("task_alias") is None
        assert out["results"][name]["l0_trace_acc,none"] == 1.0
    assert "not comparable" not in table and out["results"]["l0_trace_paper_test"]["l0_trace_acc,none"] == 1.0
    monkeypatch.setenv(task.PROMPT_ENV, "no_program")  # the table was measured with the default prompt only
    (tmp_path / "no_program").mkdir()
    out, table = run_paper_group(tmp_path / "no_program", {1: 1, 3: 2})
    label = "l0_trace_bin1 [prompt no_program: not comparable with L0-Bench's table, needs prompt default]"
    assert out["configs"]["l0_trace_bin1"]["metadata"]["l0"]["comparable_with_paper"] is False
    assert out["configs"]["l0_trace_bin1"]["task_alias"] == label and f"- {label}|" in table


def test_budgets_count_with_a_named_tokenizer(generated: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(["<s>", "<unk>", *map(chr, range(32, 127)), "\n", "\t"])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", unk_token="<unk>")
    tokenizer.save_pretrained(tmp_path / "tok")
    loaded = PreTrainedTokenizerFast.from_pretrained(tmp_path / "tok")
    assert len(loaded.encode("L2,")) == 4  # characters + <s>: not what counting characters gives
    monkeypatch.setenv(task.DATA_ENV, str(generated))
    monkeypatch.setenv(task.TOKENIZER_ENV, str(tmp_path / "tok"))
    monkeypatch.setenv(task.THINKING_ENV, "1")
    monkeypatch.setenv(task.MAX_SEQ_LEN_ENV, "8000")
    (doc, *_) = task.with_budgets(task.load_bin_docs(1))
    joined = "\n".join("".join(f"{line}\n" for line in doc["target"].split("\n"))[1:-1])
    plain = len(loaded.encode(joined)) + 200
    expected = min(plain * 20, 8000 - 2 * len(loaded.encode(doc["prompt"])))
    assert doc["max_new_tokens"] == (expected if expected >= 0 else 8000)
    assert task.budget_settings() == {"thinking": True, "max_seq_len": 8000, "tokens": "tok"}
    monkeypatch.setenv(task.TOKENIZER_ENV, str(tmp_path / "none"))
    with pytest.raises(task.LevanteError, match=r"^\$LEVANTE_L0_TOKENIZER: cannot load a tokenizer"):
        task.with_budgets(task.load_bin_docs(1))


# --- what reaches the model: L0-Bench's request cap, stop strings, each backend's handling ---------------------
def _wanted(docs: list[dict[str, Any]]) -> list[int]:
    """Each document's budget by L0-Bench's rule before any request cap (characters, thinking)."""
    return [budget.token_budget(d["target"].split("\n"), d["prompt"], len, True) for d in docs]


def test_upstream_requests_are_capped_as_l0_benchs_client_caps_them(generated: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(task.DATA_ENV, str(generated))
    monkeypatch.setenv(task.THINKING_ENV, "1")
    docs = task.with_budgets(task.load_bin_docs(2))
    wanted = _wanted(docs)
    assert min(wanted) <= budget.UPSTREAM_REQUEST_CAP < max(wanted)  # both sides of the cap occur
    assert [d["max_new_tokens"] for d in docs] == [min(w, 16384) for w in wanted]
    assert [d["budget_capped"] for d in docs] == [w > 16384 for w in wanted]
    assert budget.request_cap("default") is None


PROGRAMS = range(3 * 31, 5 * 31)  # the documents of programs 3 and 4 of bin 2


def _through_the_fake_server(model_id: str, generated: Path, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Programs 3 and 4 of bin 2, 31 voters each (thinking budgets: below and above the cap), through lmms-eval's
    `openai` class or ours, in process, against the fake OpenAI-compatible server: lmms-eval's output and the
    requests the server received."""
    from lmms_eval import evaluator
    from lmms_eval.models import get_model
    from lmms_eval.tasks import TaskManager

    from levante_tasks.testing.fake_openai import serve
    from levante_tasks.testing.processor_spy import read_log

    monkeypatch.setenv(task.DATA_ENV, str(generated))
    monkeypatch.setenv(task.THINKING_ENV, "1")
    log = tmp_path / "server.jsonl"
    model_class = get_model(model_id)  # as `--model` finds it (ours through the entry point)
    with serve(log, reply="L2,") as url:
        model = model_class(model_version="fake", api_key="fake", base_url=url, max_retries=1)
        manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
        out = evaluator.simple_evaluate(model=model, tasks=["l0_trace_bin2"], task_manager=manager,
                                        log_samples=True, offset=PROGRAMS.start, limit=len(PROGRAMS))
    return out, read_log(log)


@pytest.mark.parametrize("model_id", ["openai", "levante_openai"])
def test_requests_carry_the_capped_budget_and_ours_the_stop_string(model_id: str, generated: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    out, requests = _through_the_fake_server(model_id, generated, tmp_path, monkeypatch)
    docs = task.with_budgets(task.load_bin_docs(2))[PROGRAMS.start:PROGRAMS.stop]
    by_prompt = dict(zip((d["prompt"] for d in docs), _wanted(docs), strict=True))
    assert len(requests) == len(PROGRAMS) == len(by_prompt)
    sent = {r["texts"][0]: r["max_tokens"] for r in requests}
    assert sent == {p: min(w, 16384) for p, w in by_prompt.items()}
    assert min(sent.values()) < 16384 == max(sent.values())
    expected_stop = ["<|end|>"] if model_id == "levante_openai" else None  # lmms-eval's openai class sends none
    assert [r["stop"] for r in requests] == [expected_stop] * len(PROGRAMS)
    meta = out["configs"]["l0_trace_bin2"]["metadata"]["l0"]
    assert meta["budget"]["request_cap"] == 16384
    assert meta["backends"] == backends.NOTES  # what each class does with them, beside the run's config.model
    assert meta["backends"][model_id]["stop"].startswith("sent" if model_id == "levante_openai" else "not sent")
    records = [s["l0_trace_acc"] for s in out["samples"]["l0_trace_bin2"]]
    assert sorted(r["max_new_tokens"] for r in records) == sorted(sent.values())
    assert sum(r["budget_capped"] for r in records) == sum(w > 16384 for w in by_prompt.values()) > 0


def test_vllms_budget_floor_is_what_the_results_say() -> None:
    """lmms-eval's vllm class sends max(document budget, its own max_new_tokens): 4096 unless model_args lower it."""
    import inspect
    from types import SimpleNamespace

    from lmms_eval.models.chat.vllm import VLLM

    assert inspect.signature(VLLM.__init__).parameters["max_new_tokens"].default == 4096
    assert VLLM._select_max_new_tokens(SimpleNamespace(max_new_tokens=4096), 300) == 4096
    assert VLLM._select_max_new_tokens(SimpleNamespace(max_new_tokens=1), 300) == 300
    note = backends.NOTES["vllm"]
    assert note["stop"].startswith("not sent") and "default 4096" in note["max_new_tokens"]
    assert "max_new_tokens=1 in model_args" in note["max_new_tokens"]
