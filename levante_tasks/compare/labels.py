"""What a reader must be told before any number: the data is synthetic, or a model is a random-init test model.

Synthetic data: the synthetic release (`levante-tasks synth`) puts SYNTHETIC.md beside its children's and IRT
files and writes `dataset` = `synthetic` into every trials row; either is evidence. Test models: the random-init
checkpoints of `levante_tasks.testing.tiny_models` are saved as `tiny-clip`, `tiny-siglip`, `tiny-vlm` or
`tiny-llama` folders (their public name, summary.provenance.local_name) and the inspect doubles are
`levante-tiny/<kind>`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

TEST_MODEL = re.compile(r"(^|[/\s])(tiny-(clip|siglip|vlm|llama)|levante-tiny/\w+)(\b|$)", re.I)
SYNTHETIC_DATASET = "synthetic"


def synthetic_evidence(inputs: list[Path], trials: pd.DataFrame) -> list[str]:
    """Why the comparison's data is synthetic (empty when nothing says so), naming files by name only."""
    from levante_tasks.synth.release import MARKER  # the generator's own marker name (PIL: imported late)

    marked = [path.name for path in inputs if ((path if path.is_dir() else path.parent) / MARKER).is_file()]
    found = [f"{MARKER} beside {', '.join(marked)}"] if marked else []
    if "dataset" in trials.columns:
        values = trials["dataset"].astype(object).dropna().astype(str).str.strip().str.lower()
        if (values == SYNTHETIC_DATASET).any():
            found.append(f"{int((values == SYNTHETIC_DATASET).sum())} trials with dataset = {SYNTHETIC_DATASET}")
    return found


def is_test_model(name: str) -> bool:
    """Whether a scoring unit's model is one of levante_tasks.testing's random-init test models."""
    return bool(TEST_MODEL.search(name))
