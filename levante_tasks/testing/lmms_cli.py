"""`python -m levante_tasks.testing.lmms_cli ARGS`: lmms-eval's own CLI with the offline test models registered.

The test doubles are not lmms-eval entry points of the product: this runner registers `models.MANIFESTS`
(`levante_fixed`, `levante_image_oracle`, `levante_chat_oracle`) and then runs `lmms_eval`'s command line
unchanged, so CLI behaviour (exit status, error lines, output files) is the real one.
"""

from __future__ import annotations

from lmms_eval.__main__ import cli_evaluate
from lmms_eval.models import MODEL_REGISTRY_V2

from levante_tasks.testing.models import MANIFESTS


def register_test_models() -> None:
    """Make the test doubles known to lmms-eval's model registry by their ids."""
    for manifest in MANIFESTS:
        MODEL_REGISTRY_V2.register_manifest(manifest, overwrite=True)


def main() -> None:
    """Register the test models, then hand over to lmms-eval's CLI (it reads sys.argv)."""
    register_test_models()
    cli_evaluate()


if __name__ == "__main__":
    main()
