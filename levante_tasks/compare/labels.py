"""What a reader must be told before any number: the data is synthetic (schema.markers).

The synthetic release (`levante-tasks synth`) puts its marker file beside its children's and IRT files and names
every trials row's `dataset` `synth_*` (`synth_co_pilot`, ...; `synthetic` in earlier releases); either is
evidence. Test models are recognised where their records are read (compare.records, with the summary's rule:
runs.model.model_identity).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from levante_tasks.schema.markers import SYNTHETIC_RELEASE_MARKER

SYNTHETIC_DATASET = "synthetic"
SYNTHETIC_DATASET_PREFIX = "synth_"


def synthetic_evidence(inputs: list[Path], trials: pd.DataFrame) -> list[str]:
    """Why the comparison's data is synthetic (empty when nothing says so), naming files by name only."""
    marked = [path.name for path in inputs
              if ((path if path.is_dir() else path.parent) / SYNTHETIC_RELEASE_MARKER).is_file()]
    found = [f"{SYNTHETIC_RELEASE_MARKER} beside {', '.join(marked)}"] if marked else []
    if "dataset" in trials.columns:
        values = trials["dataset"].astype(object).dropna().astype(str).str.strip().str.lower()
        synthetic = (values == SYNTHETIC_DATASET) | values.str.startswith(SYNTHETIC_DATASET_PREFIX)
        if synthetic.any():
            found.append(f"{int(synthetic.sum())} trials with dataset = {SYNTHETIC_DATASET} or "
                          f"{SYNTHETIC_DATASET_PREFIX}*")
    return found
