"""Summarize and audit lmms-eval runs of the LEVANTE tasks: one model x task matrix, and `verify` (docs/summary.md).

Modules: `discover` (find runs), `read` (strict JSON / JSON Lines), `provenance` (hashes, model identity,
comparison keys), `units` (one run -> matrix units), `stats` (Wilson, seeds, lmms-eval stderrs), `matrix`
(duplicates, comparisons, cells, deltas), `verify`, `writers`, `plot`, `cli`.
"""

from levante_tasks.summary.cli import summarize_runs
from levante_tasks.summary.verify import verify_runs

__all__ = ["summarize_runs", "verify_runs"]
