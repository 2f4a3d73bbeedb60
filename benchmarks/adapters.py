"""Benchmark of the LEVANTE adapters on real-size random-init architectures (no downloads), same items for both sides.

- levante_vlm_mc (SmolVLM-256M shape): forward passes per item and items/s of the one-pass letter scorer vs
  lmms-eval's loglikelihood multiple-choice path (one pass per option: `mc_mode=continuation`), and of the
  `scoring=yes_no` mode (one pass per option, each with the question and that option only) vs the one-pass
  letter scorer, for each option count of `--vlm-options` (its cost grows with the option count).
- levante_clip (ViT-B/32 shape): encodes per unique input and items/s of the de-duplicated batched scorer vs a
  per-item unbatched loop (query and every option encoded for every item), plus the max probability difference.

Run: `.venv/bin/python benchmarks/adapters.py` (CPU: a few minutes; `--vlm-size tiny` for a quick smoke run; `--tiny`
for tiny shapes throughout: a few seconds, the test suite runs it).
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import torch
from levante_adapters.clip_scorer import LevanteClip, Ref
from levante_adapters.common import image_key, log_softmax, query_text, to_images
from levante_adapters.vlm_mc import LevanteVlmMc

from levante_tasks.testing.adapter_docs import choice_requests, generate_requests, make_doc_to_visual, make_docs
from levante_tasks.testing.tiny_models import build_tiny_clip, build_tiny_vlm


def _vlm(path: Path, docs: list[dict], mc_mode: str, scoring: str = "letters") -> tuple[int, float]:
    """(forward passes, seconds) to score all items through `loglikelihood` (the multiple_choice path)."""
    model = LevanteVlmMc(pretrained=str(path), device="cpu", batch_size=1, mc_mode=mc_mode, scoring=scoring)
    model.task_dict = {"synthetic": {"test": docs}}
    requests = choice_requests(docs)
    model.loglikelihood(requests[:1])  # warm-up, untimed
    model.forward_passes = 0
    start = time.perf_counter()
    model.loglikelihood(requests)
    return model.forward_passes, time.perf_counter() - start


def bench_vlm(path: Path, size: str, n_items: int, kind: str) -> None:
    """Print passes/item and items/s for one-pass scoring vs one pass per option."""
    docs = make_docs(n_items, seeds=(0,), kind=kind)
    ours, ours_s = _vlm(path, docs, "one_pass")
    base, base_s = _vlm(path, docs, "continuation")
    n = len(docs)
    print(f"levante_vlm_mc [{size}, {n} items, {kind}, {len(docs[0]['options'])} options, batch 1]")
    print(f"  one-pass scorer      : {ours / n:.2f} forward passes/item, {n / ours_s:.3f} items/s")
    print(f"  lmms-eval MC path    : {base / n:.2f} forward passes/item, {n / base_s:.3f} items/s")
    print(f"  ratio                : {base / ours:.2f}x fewer passes, {base_s / ours_s:.2f}x faster")


def bench_yes_no(path: Path, size: str, n_items: int, kind: str, option_counts: list[int]) -> None:
    """Print passes/item and items/s of scoring=yes_no vs the one-pass letter scorer, per option count."""
    print(f"levante_vlm_mc scoring=yes_no vs letters [{size}, {n_items} items, {kind}, batch 1]")
    for n_options in option_counts:
        docs = make_docs(n_items, seeds=(0,), kind=kind, n_options=n_options)
        letters, letters_s = _vlm(path, docs, "one_pass")
        yes_no, yes_no_s = _vlm(path, docs, "one_pass", scoring="yes_no")
        n = len(docs)
        print(f"  {n_options} options: letters {letters / n:.2f} passes/item, {n / letters_s:.3f} items/s; "
              f"yes_no {yes_no / n:.2f} passes/item, {n / yes_no_s:.3f} items/s; "
              f"yes_no costs {yes_no / letters:.2f}x the passes, {yes_no_s / letters_s:.2f}x the time")


def _per_item_loop(model: LevanteClip, docs: list[dict]) -> tuple[list[list[float]], int]:
    """Baseline: every item encodes its query and each option alone (batch 1), no cache."""
    to_visual = make_doc_to_visual()
    results, encodes = [], 0
    for doc in docs:
        images = to_images(to_visual(doc))
        with torch.inference_mode():
            query = model._encode_texts([Ref("text", query_text(doc))])[0]
            options = []
            for image in images:
                model._images[image_key(image)] = image
                options.append(model._encode_images([Ref("image", image_key(image))])[0])
        encodes += 1 + len(images)
        query = torch.nn.functional.normalize(query.float(), dim=-1)
        sims = [float(query @ torch.nn.functional.normalize(o.float(), dim=-1)) for o in options]
        results.append(log_softmax([model.logit_scale * s for s in sims]))
    model._images.clear()
    return results, encodes


def bench_clip(n_items: int, seeds: int, workdir: Path, size: str = "vit-b-32") -> None:
    """Print encodes per unique input and items/s: de-duplicated batched scorer vs per-item unbatched loop."""
    path = build_tiny_clip(workdir / f"clip-{size}", size=size)
    docs = make_docs(n_items, seeds=tuple(range(seeds)), kind="text->images", pool_size=2 * n_items)
    model = LevanteClip(pretrained=str(path), device="cpu", batch_size=32)
    model.task_dict = {"synthetic": {"test": docs}}
    requests = generate_requests(docs)
    _per_item_loop(model, docs[:1])  # warm-up, untimed
    start = time.perf_counter()
    plans = model._plans(requests)
    ours = model.score_plans(plans)
    ours_s = time.perf_counter() - start
    unique = len({r for p in plans for r in (p.query, *p.candidates)})
    ours_encodes = sum(model.encoded.values())
    start = time.perf_counter()
    base, base_encodes = _per_item_loop(model, docs)
    base_s = time.perf_counter() - start
    diff = max(abs(math.exp(a) - math.exp(b)) for x, y in zip(ours, base, strict=True)
               for a, b in zip(x, y, strict=True))
    n = len(docs)
    print(f"levante_clip [ViT-B/32, {n_items} items x {seeds} seeds = {n} docs, {unique} unique inputs]")
    print(f"  de-duplicated, batch 32 : {ours_encodes / unique:.2f} encodes/unique input, {n / ours_s:.1f} items/s")
    print(f"  per-item unbatched loop : {base_encodes / unique:.2f} encodes/unique input, {n / base_s:.1f} items/s")
    print(f"  ratio                   : {base_encodes / ours_encodes:.2f}x fewer encodes, "
          f"{base_s / ours_s:.2f}x faster; max |p difference| = {diff:.1e}")


def main() -> None:
    """Run both benchmarks in a temp folder and print figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vlm-size", default="smolvlm-256m", choices=["smolvlm-256m", "tiny"])
    parser.add_argument("--vlm-items", type=int, default=1)
    parser.add_argument("--vlm-kind", default="text->images", choices=["text->images", "image->images", "text->texts"])
    parser.add_argument("--vlm-options", default="2,4", help="option counts of the yes_no comparison")
    parser.add_argument("--clip-items", type=int, default=10)
    parser.add_argument("--clip-seeds", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="tiny VLM and CLIP shapes, 1 VLM item, 4 CLIP items")
    args = parser.parse_args()
    if args.tiny:
        args.vlm_size, args.vlm_items, args.vlm_options, args.clip_items, args.clip_seeds = "tiny", 1, "2", 4, 2
    torch.manual_seed(0)
    print(f"torch threads: {torch.get_num_threads()}, device: cpu")
    with tempfile.TemporaryDirectory() as tmp:
        bench_clip(args.clip_items, args.clip_seeds, Path(tmp), "tiny" if args.tiny else "vit-b-32")
        vlm = build_tiny_vlm(Path(tmp) / f"vlm-{args.vlm_size}", size=args.vlm_size)
        bench_vlm(vlm, args.vlm_size, args.vlm_items, args.vlm_kind)
        bench_yes_no(vlm, args.vlm_size, args.vlm_items, args.vlm_kind,
                     [int(n) for n in args.vlm_options.split(",")])


if __name__ == "__main__":
    main()
