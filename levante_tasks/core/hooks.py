"""The doc hooks both harnesses share: what a model is shown of a prepared doc (prompt, pictures, options, target).

lmms-eval's YAMLs name these functions (`!function levante_tasks.core.hooks.doc_to_text`); the inspect tasks and the
model adapters call them too, so every harness shows an item the same way. Nothing here imports a harness.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PIL import Image

from levante_tasks.core import controls, docs
from levante_tasks.core.images import open_image
from levante_tasks.core.prompts import compose, fill_options, image_marker


def doc_to_visual(doc: Mapping[str, Any]) -> list[Image.Image]:
    """Images in the order the prompt numbers them (`<image N>` is entry N-1): context first, then options as
    presented."""
    root = docs.version_root(doc)
    return controls.apply_variant(doc, [open_image(root, rel) for rel in doc["visual_paths"]])


def option_texts(doc: Mapping[str, Any]) -> list[str]:
    """Text options in presented order ([] for picture options, which the model sees as images, and sliders)."""
    return [str(doc["options"][i]) for i in doc["presented_order"]] if doc["option_kind"] == "text" else []


def choice_labels(doc: Mapping[str, Any]) -> list[str]:
    """The options in presented order as a harness lists them: text options as text, picture options as their
    `<image N>` marker (N counts the attached pictures from 1; `<image 1>` is the context picture when there is one)."""
    if doc["option_kind"] == "text":
        return option_texts(doc)
    first = 2 if doc.get("stimulus_image") else 1
    return [image_marker(first + position) for position in range(len(doc["presented_order"]))]


def item_text(doc: Mapping[str, Any], with_clause: bool = True) -> str:
    """What a model is shown of the doc's text (`prompts.compose`: the question, then the answer clause unless
    `with_clause` is False because the harness lists or scores the options itself), presented options filled in."""
    return fill_options(compose(doc, with_clause), option_texts(doc))


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    """The item's text (`item_text`, with its answer clause) between the configured pre/post text."""
    kwargs = lmms_eval_specific_kwargs or {}
    return f"{kwargs.get('pre_prompt', '')}{item_text(doc)}{kwargs.get('post_prompt', '')}"


def doc_to_target(doc: Mapping[str, Any]) -> str:
    """The gold letter as presented (the target number for slider items)."""
    return doc["target_letter"] or str(doc["answer"])


def doc_to_choice(doc: Mapping[str, Any]) -> list[str]:
    """multiple_choice continuations: the letters in presented order."""
    return list(doc["letters"])


def doc_to_target_index(doc: Mapping[str, Any]) -> int:
    """multiple_choice gold: the position of the correct option."""
    return list(doc["letters"]).index(doc["target_letter"])
