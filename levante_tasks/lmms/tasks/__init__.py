"""LEVANTE task YAMLs for lmms-eval; found through the `lmms_eval.tasks` entry point or LMMS_EVAL_PLUGINS."""
