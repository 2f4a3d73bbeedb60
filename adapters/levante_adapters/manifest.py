"""lmms-eval entry-point payload (group `lmms_eval.models`): ModelManifest records only, no heavy imports."""

from lmms_eval.models.registry_v2 import ModelManifest

MANIFESTS = [
    ModelManifest(model_id="levante_clip", simple_class_path="levante_adapters.clip_scorer.LevanteClip"),
    ModelManifest(model_id="levante_vlm_mc", simple_class_path="levante_adapters.vlm_mc.LevanteVlmMc"),
    ModelManifest(model_id="levante_openai", chat_class_path="levante_adapters.openai_stop.LevanteOpenAI"),
]
