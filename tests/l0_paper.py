"""The l0_trace_paper group as shipped, moved onto the bins of a small test dataset, and an lmms-eval run of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from levante_tasks.schema.task_source import TASKS_DIR

PAPER_YAML = TASKS_DIR / "l0_trace" / "l0_trace_paper.yaml"


def paper_group_on(folder: Path, bins: dict[int, int]) -> str:
    """Write the shipped paper group into `folder` with its bins renumbered (paper bin -> test bin; the others
    left out); returns the group's name."""
    text = PAPER_YAML.read_text(encoding="utf-8").replace("group: l0_trace_paper", "group: l0_trace_paper_test")
    for paper in (1, 3, 5, 7):
        old = f"  - {{task: l0_trace_bin{paper}, metadata: {{version: 1.0, l0: {{bin: {paper}, split: paper}}}}}}\n"
        assert old in text, f"{PAPER_YAML.name} no longer lists bin {paper} as the test expects"
        test = bins.get(paper)
        text = text.replace(old, "" if test is None else old.replace(str(paper), str(test)))
    (folder / "l0_trace_paper_test.yaml").write_text(text, encoding="utf-8")
    return "l0_trace_paper_test"


def run_paper_group(folder: Path, bins: dict[int, int]) -> tuple[dict[str, Any], str]:
    """lmms-eval's results for the moved group with a model that answers every target, and its printed table."""
    from lmms_eval import evaluator
    from lmms_eval.api.model import lmms
    from lmms_eval.tasks import TaskManager
    from lmms_eval.utils import make_table

    class Oracle(lmms):
        def generate_until(self, requests: list[Any]) -> list[str]:
            return [self.task_dict[r.args[4]][r.args[5]][r.args[3]]["target"] for r in requests]

        def loglikelihood(self, requests: list[Any]) -> list[Any]:
            raise NotImplementedError

        def generate_until_multi_round(self, requests: list[Any]) -> list[Any]:
            raise NotImplementedError

    group = paper_group_on(folder, bins)
    manager = TaskManager(include_path=[str(TASKS_DIR), str(folder)], include_defaults=False)
    out = evaluator.simple_evaluate(model=Oracle(), tasks=[group], task_manager=manager)
    return out, make_table(out) + make_table(out, "groups")
