"""L0-Bench prompts: the numbered program, in-context (input, trace) demonstrations, and the test input.

One document per (program, voter); voters differ only in which demonstrations they see, drawn from the
program's pool with a seed derived from (config seed, program id, voter), so any subset of documents is
reproducible on its own (L0-Bench drew them in thread order).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from levante_tasks.l0.config import GenConfig
from levante_tasks.l0.dataset import derive_seed

STOP = "<|end|>"  # ends every demonstration; generation stops there
# The instruction wording of L0-Bench's default prompt (SimengSun/L0-reasoning-bench, Apache-2.0, NVIDIA),
# kept verbatim so that scores are comparable with the published ones (configs/upstream/NOTICE.md, LICENSE).
INSTRUCTION = (
    "Please execute the following program by outputting a trace of the program execution. The trace should "
    "include the line number, the variable name and the updated value of the variable after executing that "
    "line. Please follow the examples below:"
)
CLOSING = "Please follow the format above and provide the program execution trace starting with ```L2,"


def number_lines(program: str) -> str:
    """`L<i> <line>` for each program line (tabs kept), each ending in a newline."""
    return "".join(f"L{i} {line}\n" for i, line in enumerate(program.split("\n"), start=1))


def format_args(inputs: Mapping[str, Any], params: Sequence[str]) -> str:
    """`k=v, ...` in signature order, values as Python prints them (`lst_x=[1, 2]`, `cond_x=True`)."""
    return ", ".join(f"{name}={inputs[name]}" for name in params)


def params_of(program: str) -> list[str]:
    """Parameter names from the `def function(...)` line."""
    header = program.split("\n", 1)[0]
    inside = header[header.index("(") + 1 : header.rindex(")")]
    return [p.strip() for p in inside.split(",") if p.strip()]


def format_demo(args: str, trace: Sequence[str]) -> str:
    """One demonstration block, followed by the stop string."""
    lines = "".join(f"{line}\n" for line in trace)
    return f"\nInput:\n```\nfunction({args})\n```\n\n\nOutput:\n```\n{lines}```\n\n{STOP}\n"


# L0-Bench's prompt variants this port renders: `default` (its default.txt) and `no_program` (its
# task_variation_2.txt: the same demonstrations of the same program, the program itself not shown). Its other
# variants are not rendered: task_variation_1 needs the non-test programs of each bin, which a dataset folder does
# not keep, and the zero-shot ones are wordings of their own (docs/l0.md).
PROMPT_VARIANTS = ("default", "no_program")


def render_prompt(program: str, demos: Sequence[tuple[str, Sequence[str]]], args: str,
                  variant: str = "default") -> str:
    """The full prompt: instruction, numbered program (not under `no_program`), demonstrations, test input,
    closing line."""
    if variant not in PROMPT_VARIANTS:
        raise ValueError(f"unknown prompt variant {variant!r} (known: {', '.join(PROMPT_VARIANTS)})")
    demo_text = "".join(format_demo(a, t) for a, t in demos)
    shown = f"Program:\n```\n{number_lines(program)}\n```\n" if variant == "default" else ""
    return (
        f"{INSTRUCTION}\n\n{shown}{demo_text}\n"
        f"Input:\n```\nfunction({args})\n```\n\n{CLOSING}\n\nOutput:\n"
    )


def demo_indices(config: GenConfig, item_id: str, voter: int, pool_size: int) -> list[int]:
    """Which pool entries voter `voter` sees for program `item_id` (distinct, in drawn order)."""
    rng = random.Random(derive_seed(config.seed, "demos", item_id, voter))
    return rng.sample(range(pool_size), config.num_fewshot)


def build_docs(items: Sequence[Mapping[str, Any]], pools: Sequence[Mapping[str, Any]],
               config: GenConfig, variant: str = "default") -> list[dict[str, Any]]:
    """Documents in (bin, program, voter) order, prompts of `variant`; programs without a demonstration pool are
    left out."""
    pool_by_id = {pool["id"]: pool for pool in pools}
    docs = []
    for item in items:
        pool = pool_by_id.get(item["id"])
        if pool is None:
            continue
        params = params_of(item["program"])
        args = format_args(item["inputs"], params)
        for voter in range(config.num_voters):
            chosen = demo_indices(config, item["id"], voter, len(pool["inputs"]))
            demos = [(format_args(pool["inputs"][i], params), pool["traces"][i]) for i in chosen]
            docs.append({
                "doc_id": f"{item['id']}#v{voter:02d}",
                "item_id": item["id"],
                "bin": item["bin"],
                "voter": voter,
                "total_steps": item["steps"],
                "truncated": item["truncated"],
                "prompt": render_prompt(item["program"], demos, args, variant),
                "target": "\n".join(item["trace"]),
                "program": item["program"],
                "input_args": args,
                "demo_indices": chosen,
                "profile": config.profile,
            })
    return docs
