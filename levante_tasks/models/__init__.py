"""Model map for `LMMS_EVAL_PLUGINS=levante_tasks`, which requires `<plugin>.models.AVAILABLE_MODELS`.

Our models register through the `lmms_eval.models` entry point instead, so the legacy map stays empty:
`{model_id: class name in levante_tasks.models.<model_id>}`.
"""

AVAILABLE_MODELS: dict[str, str] = {}
