"""Summarize and audit lmms-eval runs of the LEVANTE tasks: one model x task matrix, and `verify` (docs/summary.md).

Runs are found and read by levante_tasks.runs (the reader compare shares). Modules: `provenance` (hashes,
comparison keys), `units` (one lmms-eval run -> matrix units), `inspect_logs` (one inspect_ai log -> units),
`stats` (Wilson, seeds, lmms-eval stderrs), `matrix` (duplicates, comparisons, cells, deltas), `verify`,
`rescore`, `writers`, `card` (the results card), `plot`, `cli`.
"""

from levante_tasks.summary.cli import summarize_runs
from levante_tasks.summary.verify import Verifier, verify_runs

__all__ = ["Verifier", "summarize_runs", "verify_runs"]
