"""The l0_trace tasks in lmms-eval: default documents, process_results, an oracle run in-process, and a tiny
random-init causal LM through the real `python -m lmms_eval` CLI (built-in `huggingface` model, offline)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from l0_paper import run_paper_group

from levante_tasks.cli import main
from levante_tasks.l0 import aggregate, task
from levante_tasks.l0.scoring import score_response
from levante_tasks.schema import task_source
from levante_tasks.testing.lmms_fork import run_cli

TASKS_DIR = task_source.TASKS_DIR
BINS = (1, 2, 3, 4)
TINY_DATA = """\
seed: 21
num_programs: 60
min_code_lines: 4
max_code_lines: 10
max_while_loop: 6
max_trace_steps: 24
num_bins: 4
per_bin: 1
fewshot_pool_size: 2
num_fewshot: 1
num_voters: 5
"""


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny dataset: one program per bin, five voters each (one demonstration per prompt)."""
    root = tmp_path_factory.mktemp("l0")
    (root / "tiny.yaml").write_text(TINY_DATA, encoding="utf-8")
    assert main(["l0", "generate", "--config", str(root / "tiny.yaml"), "--out", str(root / "data")]) == 0
    assert main(["l0", "augment", "--data", str(root / "data")]) == 0
    return root / "data"


def test_default_task_has_every_bin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(task.DATA_ENV, raising=False)
    ranges = {1: (1, 15), 2: (58, 100), 3: (144, 186), 4: (229, 271)}
    for number in BINS:
        docs = task.load_bin_docs(number)
        assert len(docs) == 50 * 5
        assert all(ranges[number][0] <= d["total_steps"] <= ranges[number][1] for d in docs)
        assert [d["voter"] for d in docs[:10]] == [0, 1, 2, 3, 4] * 2
        assert docs[0]["prompt"].startswith("Please execute the following program")
        assert docs[0]["prompt"].count("<|end|>") == 4


def test_missing_data_or_bin_is_named(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(task.DATA_ENV, str(tmp_path / "nothing"))
    with pytest.raises(task.LevanteError, match=r"nothing/manifest.json: no such file"):
        task.load_bin_docs(1)
    monkeypatch.setenv(task.DATA_ENV, str(data_dir))
    with pytest.raises(task.LevanteError, match=r"bin 5 has no programs in \$LEVANTE_L0_DATA"):
        task.load_bin_docs(5)


def test_process_results_on_crafted_responses() -> None:
    doc = {"item_id": "p", "voter": 3, "target": "L2,a:1\nL3,\nL4,b:[1,2]"}
    def summary(out: dict) -> tuple:
        return out["l0_trace_acc"]["correct"], out["l0_steps"]["steps"], out["l0_parse_failures"]

    good = task.process_results(doc, ["```\nL2,a:1\nL3,\nL4,b:[1, 2]\n```"])
    assert summary(good) == (1, 3, 0.0)
    assert good["l0_pass_at_5"] == {**good["l0_maj_at_5_acc"], "voter": 3, "correct": 1, "steps": 3, "total": 3}
    assert all(good[name] is good["l0_trace_acc"] for name in task.RECORD_METRICS)
    partial = task.process_results(doc, [("L2,a:1\nL3,\nL4,b:[2,1]", {})])  # (text, info) wrapper
    assert summary(partial) == (0, 2, 0.0)
    none = task.process_results(doc, ["no idea"])
    assert summary(none) == (0, 0, 1.0)


def _wrong(target: str) -> str:
    """The target with its last line replaced: total - 1 steps."""
    lines = target.split("\n")
    return "\n".join([*lines[:-1], "L99,"])


# Per program: voter 0 and 3 answer the same wrong trace, voters 1 and 2 the target, voter 4 prose.
ORACLE_ANSWERS = {0: "wrong", 1: "target", 2: "target", 3: "wrong", 4: "prose"}


def test_oracle_model_in_lmms_eval_gives_the_hand_computed_metrics(data_dir: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_eval import evaluator
    from lmms_eval.api.model import lmms
    from lmms_eval.tasks import TaskManager

    class Oracle(lmms):
        def generate_until(self, requests: list[Any]) -> list[str]:
            out = []
            for request in requests:
                _, generation, _, doc_id, task_name, split = request.args
                doc = self.task_dict[task_name][split][doc_id]
                budgets.append((generation["max_new_tokens"], doc["max_new_tokens"], len(doc["target"])))
                kind = ORACLE_ANSWERS[doc["voter"]]
                out.append({"target": doc["target"], "wrong": _wrong(doc["target"]), "prose": "No."}[kind])
            return out

        def loglikelihood(self, requests: list[Any]) -> list[Any]:
            raise NotImplementedError

        def generate_until_multi_round(self, requests: list[Any]) -> list[Any]:
            raise NotImplementedError

    budgets: list[tuple[int, int, int]] = []
    monkeypatch.setenv(task.DATA_ENV, str(data_dir))
    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
    out = evaluator.simple_evaluate(model=Oracle(), tasks=["l0_trace_bin2"], task_manager=manager, log_samples=True)
    # Each request carries its own document's budget, above the target's length (L0-Bench's rule, budget.py).
    assert len(budgets) == 5 and all(asked == own > length for asked, own, length in budgets)
    assert out["configs"]["l0_trace_bin2"]["metadata"]["l0"]["profile"] == "default"
    result = out["results"]["l0_trace_bin2"]
    (doc,) = {s["l0_pass_at_5"]["item_id"]: s for s in out["samples"]["l0_trace_bin2"]}.values()
    total = doc["l0_pass_at_5"]["total"]
    # By hand: 2 of 5 voters correct; steps total-1, total, total, total-1, 0; one parse failure (the prose);
    # majority: "wrong" (voters 0, 3) ties "target" (voters 1, 2) and was voted first -> wrong, total-1 steps;
    # pass@5 with n=5, c=2: n - c = 3 < 5 -> 1.
    assert result["l0_trace_acc,none"] == pytest.approx(0.4)
    assert result["l0_steps,none"] == pytest.approx((4 * total - 2) / 5)
    assert result["l0_parse_failures,none"] == 1
    assert result["l0_maj_at_5_acc,none"] == 0.0
    assert result["l0_maj_at_5_steps,none"] == total - 1
    assert result["l0_pass_at_5,none"] == 1.0


def test_paper_group_on_default_profile_data_is_labelled_not_comparable(data_dir: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # The shipped l0_trace_paper group, its bins 1/3/5/7 moved to this dataset's 1-4: lmms-eval builds tasks
    # after the model (their kind depends on it), so the run is labelled rather than refused.
    monkeypatch.setenv(task.DATA_ENV, str(data_dir))
    out, table = run_paper_group(tmp_path, {1: 1, 3: 2, 5: 3, 7: 4})
    for number in BINS:
        name = f"l0_trace_bin{number}"
        assert out["configs"][name]["metadata"]["l0"]["comparable_with_paper"] is False
        assert out["configs"][name]["task_alias"] == task.paper_label(name, "default")
        assert out["results"][name]["l0_trace_acc,none"] == 1.0  # the numbers are still there, labelled
    assert all(f"- {task.paper_label(f'l0_trace_bin{n}', 'default')}|" in table for n in BINS)  # lmms-eval's table
    plain = evaluator_configs(["l0_trace_bin1"], data_dir, monkeypatch)  # outside the paper group: no label
    assert "comparable_with_paper" not in plain["l0_trace_bin1"]["metadata"]["l0"]


def evaluator_configs(tasks: list[str], data: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The task configs lmms-eval records for `tasks` on `data`, with the model that answers nothing."""
    from lmms_eval import evaluator
    from lmms_eval.api.model import lmms
    from lmms_eval.tasks import TaskManager

    class Silent(lmms):
        def generate_until(self, requests: list[Any]) -> list[str]:
            return [""] * len(requests)

        def loglikelihood(self, requests: list[Any]) -> list[Any]:
            raise NotImplementedError

        def generate_until_multi_round(self, requests: list[Any]) -> list[Any]:
            raise NotImplementedError

    monkeypatch.setenv(task.DATA_ENV, str(data))
    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
    return evaluator.simple_evaluate(model=Silent(), tasks=tasks, task_manager=manager)["configs"]


def test_unavailable_data_stops_lmms_eval_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_eval import evaluator
    from lmms_eval.tasks import TaskManager

    monkeypatch.setenv(task.DATA_ENV, str(tmp_path / "nothing"))
    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
    with pytest.raises(SystemExit) as info:  # lmms-eval turns other exceptions into a traceback
        evaluator.simple_evaluate(model="dummy", tasks=["l0_trace_bin1"], task_manager=manager)
    message = str(info.value)
    assert message.startswith("l0_trace_bin1: ") and "\n" not in message
    assert message.endswith("nothing/manifest.json: no such file (run `levante-tasks l0 generate`)")


def test_a_task_yaml_without_a_bin_is_named(tmp_path: Path) -> None:
    from lmms_eval import evaluator
    from lmms_eval.tasks import TaskManager

    template = (TASKS_DIR / "l0_trace" / "_l0_trace_template_yaml").read_text(encoding="utf-8")
    (tmp_path / "l0_trace_nobin.yaml").write_text(f"task: l0_trace_nobin\n{template}", encoding="utf-8")
    manager = TaskManager(include_path=str(tmp_path), include_defaults=False)
    with pytest.raises(SystemExit, match=r"^l0_trace_nobin: the task YAML needs `metadata: \{l0: \{bin: <number>"):
        evaluator.simple_evaluate(model="dummy", tasks=["l0_trace_nobin"], task_manager=manager)


def build_tiny_causal_lm(out_dir: Path) -> Path:
    """A random-init 2-layer Llama with a character-level tokenizer (offline; saved like a hub snapshot)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<s>", "</s>", "<unk>"]
    vocab = {t: i for i, t in enumerate([*specials, *map(chr, range(32, 127)), "\n", "\t"])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")  # one token per character
    tok.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                        unk_token="<unk>")
    # lmms-eval's `huggingface` model applies a chat template: the user's text pieces, nothing else.
    tokenizer.chat_template = (
        "{% for m in messages %}{% if m['content'] is string %}{{ m['content'] }}{% else %}"
        "{% for c in m['content'] %}{% if c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}"
        "{% endif %}{% endfor %}"
    )
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
                         pad_token_id=0, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    LlamaForCausalLM(config).eval().save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def test_tiny_causal_lm_runs_l0_trace_through_the_lmms_eval_cli(data_dir: Path, tmp_path: Path) -> None:
    model_dir = build_tiny_causal_lm(tmp_path / "tiny-llama")
    out = tmp_path / "out"
    env = {**os.environ, task.DATA_ENV: str(data_dir), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    args = ["--model", "huggingface", "--model_args", f"pretrained={model_dir},device=cpu,device_map=cpu",
            "--tasks", "l0_trace", "--limit", "5", "--gen_kwargs", "max_new_tokens=8", "--output_path", str(out),
            "--log_samples"]
    proc = run_cli(args, cwd=tmp_path, env=env, timeout=600, entry="lmms_eval", models=["huggingface"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    (results_file,) = out.rglob("*_results.json")
    results = json.loads(results_file.read_text(encoding="utf-8"))
    assert sorted(results["group_subtasks"]["l0_trace"]) == [f"l0_trace_bin{b}" for b in BINS]
    for number in BINS:
        name = f"l0_trace_bin{number}"
        (samples_file,) = out.rglob(f"*_samples_{name}.jsonl")
        samples = [json.loads(line) for line in samples_file.read_text(encoding="utf-8").splitlines()]
        assert len(samples) == 5 == results["n-samples"][name]["effective"]
        # Every stored metric is what our scorer says about the stored response and target.
        for sample in samples:
            score = score_response(sample["filtered_resps"], sample["target"])
            assert sample["l0_trace_acc"]["correct"] == int(score.correct)
            assert sample["l0_steps"]["steps"] == score.steps
            assert sample["l0_parse_failures"] == float(score.parse_failed)
            assert sample["l0_maj_at_5_acc"]["total"] == score.total
        records = [s["l0_maj_at_5_acc"] for s in samples]
        assert sorted(r["voter"] for r in records) == [0, 1, 2, 3, 4]
        row = results["results"][name]
        assert row["l0_trace_acc,none"] == pytest.approx(sum(r["correct"] for r in records) / 5)
        assert row["l0_steps,none"] == pytest.approx(sum(r["steps"] for r in records) / 5)
        assert row["l0_parse_failures,none"] == sum(s["l0_parse_failures"] for s in samples)
        for metric, function in (("l0_maj_at_5_acc", aggregate.maj_at_5_acc),
                                 ("l0_maj_at_5_steps", aggregate.maj_at_5_steps),
                                 ("l0_pass_at_5", aggregate.pass_at_5)):
            expected = function(records)
            assert not math.isnan(expected) and row[f"{metric},none"] == pytest.approx(expected)
    group = results["results"]["l0_trace"]
    assert "l0_trace_acc,none" in group and "l0_steps,none" in group
