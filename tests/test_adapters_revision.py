"""`revision=<commit>` pins what the adapters load, not only what they record: an offline hub cache holds two
snapshots of one repo (main -> A); asking for B loads B's weights and records B. The loads run in a fresh process,
because the hub cache location and offline flag are read when huggingface_hub is imported: one process for the three
loads of a test (they share that cache), one after the other as a user's session would make them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

COMMITS = {"a": "a" * 40, "b": "b" * 40}
ADAPTERS = {  # kind: (the tiny checkpoint kinds of snapshots a and b: seeds 0 and 1, module, class)
    "clip": (("clip", "clip-seed1"), "levante_adapters.clip_scorer", "LevanteClip"),
    "vlm": (("idefics3", "idefics3-seed1"), "levante_adapters.vlm_mc", "LevanteVlmMc"),
}
# argv: module, class, then one JSON list [pretrained, revision or null] per load; prints one JSON line per load
PROBE = """import json, sys, importlib
cls = getattr(importlib.import_module(sys.argv[1]), sys.argv[2])
for pretrained, revision in map(json.loads, sys.argv[3:]):
    scorer = cls(pretrained=pretrained, device="cpu", **({"revision": revision} if revision else {}))
    total = sum(float(p.double().sum()) for p in scorer.model.parameters())
    print(json.dumps([total, scorer.identity]))
"""


def _loads(tmp_path, module: str, cls: str, *loads: tuple[str, str | None]) -> list[tuple[float, dict]]:
    """(parameter sum, recorded identity) of each (pretrained, revision) load, in order, in one fresh process."""
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE, module, cls, *map(json.dumps, loads)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()[-len(loads):]
    return [tuple(json.loads(line)) for line in lines]


@pytest.mark.parametrize("kind", sorted(ADAPTERS))
def test_a_hub_model_is_loaded_at_the_requested_revision(tmp_path, kind, tiny_checkpoint):
    checkpoints, module, cls = ADAPTERS[kind]
    repo = tmp_path / "hub" / f"models--org--tiny-{kind}"
    for checkpoint, commit in zip(checkpoints, COMMITS.values(), strict=True):
        shutil.copytree(tiny_checkpoint(checkpoint), repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMITS["a"])
    (snapshot_b, _), (main, main_identity), (pinned, identity) = _loads(
        tmp_path, module, cls, (str(repo / "snapshots" / COMMITS["b"]), None), (f"org/tiny-{kind}", None),
        (f"org/tiny-{kind}", COMMITS["b"]))
    assert main != pytest.approx(snapshot_b)  # the two snapshots differ; main is A
    assert main_identity == {"model_id": f"org/tiny-{kind}", "revision": COMMITS["a"], "test_model": True}
    assert pinned == pytest.approx(snapshot_b)
    assert identity == {"model_id": f"org/tiny-{kind}", "revision": COMMITS["b"], "test_model": True}


def test_a_revision_that_is_not_a_commit_is_refused_before_loading(tmp_path):
    from levante_adapters.clip_scorer import LevanteClip

    with pytest.raises(ValueError, match="40-character hex commit"):
        LevanteClip(pretrained=str(tmp_path / "absent"), device="cpu", revision="main")
