"""The tiny random-init checkpoints the tests run, each built once per test run (tests/built_once.py) and only read.

A build imports transformers' modelling code and costs seconds of CPU; the same checkpoint (same builder, same
arguments) served many test modules, each building its own copy. Here every kind is built by the first xdist worker
that asks and shared by all. A test must not write into one: a test that edits a checkpoint copies it first.
This module imports torch: conftest.py imports it only when a test asks for a checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from built_once import built_once

from levante_tasks.testing import tiny_models

# kind: (folder name, builder). The folder name is the model id the adapters report (the folder's basename);
# the kinds are test_compat_models.py's checkpoint names (its table shows them), plus the adapters' own.
CHECKPOINTS: dict[str, tuple[str, Callable[[Path], Path]]] = {
    "clip": ("tiny-clip", tiny_models.build_tiny_clip),
    "clip-seed1": ("tiny-clip", lambda out: tiny_models.build_tiny_clip(out, seed=1)),
    "siglip": ("tiny-siglip", tiny_models.build_tiny_siglip),
    "idefics3": ("tiny-vlm", tiny_models.build_tiny_vlm),
    "idefics3-seed1": ("tiny-vlm", lambda out: tiny_models.build_tiny_vlm(out, seed=1)),
    "qwen2_vl": ("tiny-qwen2-vl", lambda out: tiny_models.build_tiny_qwen_vl(out, "qwen2_vl")),
    "qwen2_5_vl": ("tiny-qwen2.5-vl", lambda out: tiny_models.build_tiny_qwen_vl(out, "qwen2_5_vl")),
    "idefics2": ("tiny-idefics2", tiny_models.build_tiny_idefics2),
    "llava-1.5": ("tiny-llava", lambda out: tiny_models.build_tiny_llava(out, "llava")),
    "llava-onevision": ("tiny-llava-onevision", lambda out: tiny_models.build_tiny_llava(out, "llava_onevision")),
}


def tiny_checkpoint(factory: pytest.TempPathFactory, kind: str) -> Path:
    """The checkpoint folder of `kind` (CHECKPOINTS), built once per test run on first use; read only."""
    name, build = CHECKPOINTS[kind]
    return built_once(factory, f"tiny-model-{kind}", lambda folder: build(folder / name)) / name
