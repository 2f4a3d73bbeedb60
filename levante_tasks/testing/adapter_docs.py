"""Synthetic LEVANTE-shaped docs (design.md §3b), images and lmms-eval requests for adapter tests and benchmarks.

Items reuse a shared image pool (as vocab distractors do) and come in several option-order seeds (as the task
variants do), so de-duplication across items and seeds is exercised the way real runs exercise it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from lmms_eval.api.instance import Instance
from PIL import Image, ImageDraw

from levante_tasks.core.prompts import image_marker
from levante_tasks.schema.items import LETTERS


def draw_image(index: int, size: int = 64) -> Image.Image:
    """A deterministic, visibly distinct image for pool entry `index` (colour + stripes encode the index)."""
    rng = random.Random(index)
    image = Image.new("RGB", (size, size), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(image)
    for k in range(index % 5 + 1):
        y = (k + 1) * size // (index % 5 + 2)
        draw.line([(0, y), (size, y)], fill=tuple(rng.randrange(256) for _ in range(3)), width=3)
    draw.text((size // 3, size // 3), str(index), fill=(255, 255, 255))
    return image


def make_docs(
    n_items: int,
    seeds: Sequence[int] = (0,),
    n_options: int = 4,
    kind: str = "text->images",
    pool_size: int | None = None,
) -> list[dict[str, Any]]:
    """Docs with every field the adapters read: one per (seed, item), seed-major like the task variants.

    kind: `text->images` (vocab/trog-like), `image->images` (matrix-like, with a context image) or
    `text->texts` (math-like text options).
    """
    pool = pool_size or max(n_items * 2, n_options + 2)
    docs = []
    for seed in seeds:
        for item in range(n_items):
            rng = random.Random(item)
            taken = {item % pool, (item + 1) % pool}  # answer and context image are never distractors
            keys = [f"img{item % pool}"] + [f"img{j}" for j in rng.sample(
                [j for j in range(pool) if j not in taken], n_options - 1)]
            order = list(range(n_options))
            random.Random(f"{seed}|{item}").shuffle(order)
            text_options = kind == "text->texts"
            options = [str(item + 10 * j) for j in range(n_options)] if text_options else keys
            docs.append({
                "item_uid": f"item{item}", "task": "synthetic", "seed": seed, "variant": "original",
                "prompt": "", "prompt_phrase": f"word {item}", "question": "",
                "options": options, "answer": options[0], "presented_order": order,
                "letters": list(LETTERS[:n_options]), "target_letter": LETTERS[order.index(0)],
                "option_kind": "text" if text_options else "image",
                "option_images": [] if text_options else keys,
                "stimulus_image": f"img{(item + 1) % pool}" if kind == "image->images" else "",
                "response_format": "choice", "n_options": n_options,
            })
    return docs


def doc_visual_keys(doc: dict[str, Any]) -> list[str]:
    """Image keys doc_to_visual shows: [context] + option images in presented order."""
    keys = [doc["stimulus_image"]] if doc.get("stimulus_image") else []
    if doc.get("option_kind") == "image":
        keys += [doc["option_images"][i] for i in doc["presented_order"]]
    return keys


def make_doc_to_visual(size: int = 64) -> Callable[[dict[str, Any]], list[Image.Image]]:
    """doc_to_visual for synthetic docs: image key `imgN` -> draw_image(N), freshly drawn on every call."""
    def doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
        return [draw_image(int(key[3:]), size) for key in doc_visual_keys(doc)]
    return doc_to_visual


def prompt_for(doc: dict[str, Any]) -> str:
    """A LEVANTE-style prompt with `<image N>` markers (the context picture, when there is one, as `<image 1>`)."""
    n = len(doc["options"])
    letters = doc["letters"][:n]
    if doc["option_kind"] == "text":
        listing = "; ".join(f"{x}: {doc['options'][i]}" for x, i in zip(letters, doc["presented_order"], strict=True))
    else:
        first = 2 if doc.get("stimulus_image") else 1
        listing = "; ".join(f"{x}: {image_marker(first + k)}" for k, x in enumerate(letters))
    head = f"{image_marker(1)} Choose the best option." if doc.get("stimulus_image") else (
        f'Choose the image that matches the text: "{doc["prompt_phrase"]}".')
    return f"{head} Answer with {', '.join(letters[:-1])} or {letters[-1]}. {listing}"


def generate_requests(docs: Sequence[dict[str, Any]], task: str = "synthetic", split: str = "test",
                      size: int = 64) -> list[Instance]:
    """generate_until Instances as lmms-eval builds them for a simple model."""
    to_visual = make_doc_to_visual(size)
    return [Instance("generate_until", (prompt_for(d), {"until": ["\n\n"]}, to_visual, i, task, split), idx=0,
                     metadata={"task": task, "doc_id": i, "repeats": 1})
            for i, d in enumerate(docs)]


def choice_requests(docs: Sequence[dict[str, Any]], task: str = "synthetic", split: str = "test",
                    size: int = 64) -> list[Instance]:
    """multiple_choice loglikelihood Instances: one per option, continuation " <letter>", idx = option index."""
    to_visual = make_doc_to_visual(size)
    return [Instance("loglikelihood", (prompt_for(d), " " + x, to_visual, i, task, split), idx=k,
                     metadata={"task": task, "doc_id": i, "repeats": 1})
            for i, d in enumerate(docs) for k, x in enumerate(d["letters"][:len(d["options"])])]
