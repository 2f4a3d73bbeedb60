"""The real-size shapes of `tiny_models` (benchmarks/gpu.py's checkpoints) have the published parameter counts, and
a non-float32 build is initialised and saved in that dtype."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from levante_tasks.testing import tiny_models


@pytest.mark.parametrize(("build", "published"), [
    (lambda out: tiny_models.build_tiny_vlm(out, "smolvlm-256m"), 256e6),  # SmolVLM-256M-Instruct
    (lambda out: tiny_models.build_tiny_qwen_vl(out, "qwen2_vl", size="qwen2-vl-2b"), 2.21e9),  # Qwen2-VL-2B-Instruct
])
def test_real_size_shapes_have_the_published_parameter_count(build, published: float, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[torch.nn.Module] = []

    def on_meta(model_cls: type, config: object, dtype: torch.dtype) -> torch.nn.Module:
        with torch.device("meta"):  # shapes only: no memory, no init time
            return model_cls(config)

    monkeypatch.setattr(tiny_models, "_random_init", on_meta)
    monkeypatch.setattr(tiny_models, "_save", lambda model, processor, out: built.append(model) or Path(out))
    build(tmp_path)
    count = sum(p.numel() for p in built[0].parameters())
    assert abs(count - published) / published < 0.01, count


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_a_build_is_saved_in_its_dtype(dtype: torch.dtype, tmp_path: Path) -> None:
    from safetensors import safe_open

    out = tiny_models.build_tiny_qwen_vl(tmp_path, dtype=dtype)
    assert json.loads((out / "config.json").read_text())["dtype"] == str(dtype).removeprefix("torch.")
    with safe_open(str(out / "model.safetensors"), "pt") as weights:
        assert {weights.get_tensor(k).dtype for k in weights.keys()} == {dtype}
