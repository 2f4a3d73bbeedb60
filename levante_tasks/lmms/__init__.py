"""The lmms-eval face: the task class and scoring hooks, the model bridge, metrics, the generated task YAMLs
(`tasks/`) and the lmms-eval patcher (`patcher/`). Stands on `core/` and `schema/`."""
