"""The model map upstream's plugin protocol reads for `LMMS_EVAL_PLUGINS=levante_tasks`
(`<plugin>.models.AVAILABLE_MODELS`; its task folder is `<plugin>.tasks`, `levante_tasks/tasks/`). Our adapters
register through the `lmms_eval.models` entry point instead, so this map stays empty."""

AVAILABLE_MODELS: dict[str, str] = {}
