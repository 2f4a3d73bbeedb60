"""Entry-point payload for the offline test models (import-light: lmms-eval loads it on every start)."""

from lmms_eval.models.registry_v2 import ModelManifest

MANIFESTS = (
    ModelManifest(model_id="levante_fixed", simple_class_path="levante_tasks.harness.test_models.FixedLetterModel"),
    ModelManifest(
        model_id="levante_image_oracle", simple_class_path="levante_tasks.harness.test_models.ImageIndexOracle"
    ),
)
