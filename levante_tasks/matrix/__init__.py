"""`levante-tasks matrix`: resumable model x task x seed evaluations through lmms-eval (docs/matrix.md).

config: the YAML file -> dataclasses; plan: cells, their hashes and lmms-eval argv; run: executing cells with
state files and out-of-memory fallback; auto: the stopping rule of `orders: auto`; report: the end step (summary,
comparison, report.md); slurm: the job-array script; cli: the subcommand.
"""
