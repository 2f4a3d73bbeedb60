"""`revision=<commit>` pins what the adapters load, not only what they record: an offline hub cache holds two
snapshots of one repo (main -> A); asking for B loads B's weights and records B. The loads run in a fresh process,
because the hub cache location and offline flag are read when huggingface_hub is imported: one process for the loads
of every adapter (its repo in the one hub cache they share), one after the other as a user's session would make them,
its output read by each adapter's test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

COMMITS = {"a": "a" * 40, "b": "b" * 40}
ADAPTERS = {  # kind: (the tiny checkpoint kinds of snapshots a and b: seeds 0 and 1, module, class)
    "clip": (("clip", "clip-seed1"), "levante_adapters.clip_scorer", "LevanteClip"),
    "vlm": (("idefics3", "idefics3-seed1"), "levante_adapters.vlm_mc", "LevanteVlmMc"),
}
# argv: one JSON list [module, class, pretrained, revision or null] per load; prints one JSON line per load
PROBE = """import json, sys, importlib
for module, name, pretrained, revision in map(json.loads, sys.argv[1:]):
    cls = getattr(importlib.import_module(module), name)
    scorer = cls(pretrained=pretrained, device="cpu", **({"revision": revision} if revision else {}))
    total = sum(float(p.double().sum()) for p in scorer.model.parameters())
    print(json.dumps([total, scorer.identity]))
"""
Load = tuple[float, dict]  # (parameter sum, recorded identity) of one load


def _loads(hub: Path, *loads: tuple[str, str, str, str | None]) -> list[Load]:
    """(parameter sum, recorded identity) of each (module, class, pretrained, revision) load, in order, in one fresh
    process whose hub cache is `hub`, offline."""
    env = {**os.environ, "HF_HUB_CACHE": str(hub), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE, *map(json.dumps, loads)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()[-len(loads):]
    return [tuple(json.loads(line)) for line in lines]


@pytest.fixture(scope="module")
def loads(tmp_path_factory: pytest.TempPathFactory, tiny_checkpoint) -> dict[str, list[Load]]:
    """kind -> its three loads (snapshot B's folder, the repo at main, the repo at B's commit), all made by one fresh
    process over one hub cache that holds each adapter's repo `org/tiny-<kind>` (snapshots A and B, main -> A)."""
    hub = tmp_path_factory.mktemp("revision") / "hub"
    wanted: list[tuple[str, str, str, str | None]] = []
    for kind, (checkpoints, module, cls) in sorted(ADAPTERS.items()):
        repo = hub / f"models--org--tiny-{kind}"
        for checkpoint, commit in zip(checkpoints, COMMITS.values(), strict=True):
            shutil.copytree(tiny_checkpoint(checkpoint), repo / "snapshots" / commit)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(COMMITS["a"])
        wanted += [(module, cls, str(repo / "snapshots" / COMMITS["b"]), None), (module, cls, f"org/tiny-{kind}", None),
                   (module, cls, f"org/tiny-{kind}", COMMITS["b"])]
    found = _loads(hub, *wanted)
    return {kind: found[3 * i:3 * i + 3] for i, kind in enumerate(sorted(ADAPTERS))}


@pytest.mark.parametrize("kind", sorted(ADAPTERS))
def test_a_hub_model_is_loaded_at_the_requested_revision(kind: str, loads: dict[str, list[Load]]) -> None:
    (snapshot_b, _), (main, main_identity), (pinned, identity) = loads[kind]
    assert main != pytest.approx(snapshot_b)  # the two snapshots differ; main is A
    assert main_identity == {"model_id": f"org/tiny-{kind}", "revision": COMMITS["a"], "test_model": True}
    assert pinned == pytest.approx(snapshot_b)
    assert identity == {"model_id": f"org/tiny-{kind}", "revision": COMMITS["b"], "test_model": True}


def test_a_revision_that_is_not_a_commit_is_refused_before_loading(tmp_path):
    from levante_adapters.clip_scorer import LevanteClip

    with pytest.raises(ValueError, match="40-character hex commit"):
        LevanteClip(pretrained=str(tmp_path / "absent"), device="cpu", revision="main")
