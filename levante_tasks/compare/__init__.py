"""Compare models with children: IRT ability (EAP), accuracy vs item difficulty, response distributions, age.

Entry point: `levante-tasks compare` (`levante_tasks.compare.cli`); conventions in `conventions.py` and
docs/comparison.md.
"""
