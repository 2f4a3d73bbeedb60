"""The lmms-eval face: the task class and scoring hooks, the model bridge, metrics, the generator of the task YAMLs
(`generate.py`, writing into `levante_tasks/tasks/`) and the lmms-eval patcher (`patcher/`). Stands on `core/` and
`schema/`."""
