"""Test doubles of levante-tasks, in one place: offline lmms-eval models (`models`, `scripted`), the lmms-eval
CLI with them registered (`lmms_cli`, and `lmms_fork`, which runs it forked from a server that imported lmms-eval
once: one per import-time environment and lmms-eval tree; it forks `levante-tasks` runs the same way), a tiny
prepared data dir whose images encode their own index (`fixture_data`), random-init checkpoints built offline
(`tiny_models`) and adapter-shaped docs and requests (`adapter_docs`).

Used by the tests, the benchmarks and `levante-tasks demo`; the task layer and the model adapters
(`levante_adapters`) never import it (a test checks).
"""
