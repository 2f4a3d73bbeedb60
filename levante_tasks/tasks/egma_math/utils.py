"""lmms-eval hooks of this task folder: a thin shim, because lmms-eval re-executes this file by path."""

from levante_tasks.harness.lmms_task import (
    doc_to_choice,
    doc_to_target,
    doc_to_target_index,
    doc_to_text,
    doc_to_visual,
    process_results,
    process_results_mc,
)

__all__ = [
    "doc_to_choice",
    "doc_to_target",
    "doc_to_target_index",
    "doc_to_text",
    "doc_to_visual",
    "process_results",
    "process_results_mc",
]
