"""Installs the processor spy in a process started with this folder on PYTHONPATH and $LEVANTE_PROCESSOR_SPY set."""

import os
from pathlib import Path

if os.environ.get("LEVANTE_PROCESSOR_SPY"):
    from levante_tasks.testing.processor_spy import install

    install(Path(os.environ["LEVANTE_PROCESSOR_SPY"]))
