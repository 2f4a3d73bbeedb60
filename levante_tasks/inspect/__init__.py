"""The LEVANTE tasks for inspect_ai (docs/inspect.md): the same prepared docs, option orders, images and records as
the lmms-eval tasks, through inspect's `multiple_choice()` solver and `choice()` scorer plus our record scorer.

Modules: `samples` (doc -> Sample), `scorer` (the per-item record), `task` (one Task per catalogue task and
variant). The @task functions are registered in `levante_tasks._registry` (entry point group `inspect_ai`).
"""
