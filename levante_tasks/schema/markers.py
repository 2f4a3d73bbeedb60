"""How made-up data and test models are recognised, so every report can say so (docs/summary.md, "Markers").

- Synthetic data: `levante-tasks synth` puts `SYNTHETIC_RELEASE_MARKER` in the release's version folder;
  `prepare` records `"synthetic": true` in each dataset.json of a release that holds it, and the tasks copy that
  into their run provenance (`synthetic_data`), which summaries read.
- Test models: a random-init checkpoint of `levante_tasks.testing.tiny_models` carries `TEST_MODEL_CONFIG_KEY` in
  its config.json, which the levante adapters copy into the model identity of their answers (`test_model`); the
  offline test doubles are known by name (`TEST_DOUBLE_ADAPTERS`, inspect's `TEST_INSPECT_PROVIDER`).
"""

from __future__ import annotations

SYNTHETIC_RELEASE_MARKER = "SYNTHETIC.md"
STANDIN_RELEASE_MARKER = "STAND-INS.md"  # `levante-tasks standins` lists the pictures it drew in it (data card says so)
TEST_MODEL_CONFIG_KEY = "levante_test_model"
TEST_DOUBLE_ADAPTERS = ("levante_fixed", "levante_image_oracle", "levante_chat_oracle", "levante_oom", "levante_crash",
                        "levante_counted")
TEST_INSPECT_PROVIDER = "levante-tiny"
