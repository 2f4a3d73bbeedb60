"""The model map upstream's plugin protocol reads for `LMMS_EVAL_PLUGINS=levante_tasks.lmms`
(`<plugin>.models.AVAILABLE_MODELS`; its task folder is `<plugin>.tasks`). Our adapters register through the
`lmms_eval.models` entry point instead, so this map stays empty."""

AVAILABLE_MODELS: dict[str, str] = {}
