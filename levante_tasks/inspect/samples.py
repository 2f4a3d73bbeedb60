"""One LEVANTE doc (levante_tasks.core.docs) as one inspect Sample, shown as lmms-eval shows it (core.hooks).

Input: one user message whose text is the item's question composed without its answer clause
(`core.hooks.item_text`; inspect's `multiple_choice()` lists the options instead), with a line naming the attached
pictures in order, followed by the pictures of `core.hooks.doc_to_visual` (context `<image 1>` first, then options
as presented; blank or shuffled per variant) as PNG data URIs, so logs hold no file paths. Choices: the options in
OUR presented order (picture options as their `<image N>` marker, text options as their text); target: the gold
letter; id: the item's uid (`<uid>@seed<k>` for the replicates of `-T orders=K`).
Our words (the picture line, the multiple_choice() instruction of `template`) are the item's locale's
(`core.locale_text`); the `ANSWER: $LETTER` line it asks for stays English, as inspect's `choice()` reads it.
Metadata: the doc fields the record needs (identity, seed, variant, presented and canonical order, letters; a
translated doc's `locale`, which the record scorer reads the answer in);
the message's metadata names the item (`ITEM_KEY`: task, seed, variant, item_uid) for offline scoring models
(levante_tasks.testing.inspect_model), which real providers ignore.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping
from typing import Any

from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageUser, ContentImage, ContentText
from PIL import Image

from levante_tasks.core import hooks
from levante_tasks.core.locale_text import item_locale, text
from levante_tasks.core.prompts import image_marker
from levante_tasks.schema.locales import Locale

# The doc fields a Sample carries (and the record scorer reads back): docs/design.md §3b.
DOC_FIELDS = ("item_uid", "task", "trial_type", "seed", "variant", "presented_order", "letters", "target_letter",
              "options", "option_kind", "response_format", "n_options", "data_version", "visual_donor")
ITEM_KEY = "levante_item_ref"


def template(locale: Locale) -> str:
    """inspect's multiple_choice() prompt in our words of `locale`, its `{question}`, `{choices}` and `{letters}` left
    for inspect to fill: it asks for the `ANSWER: X` line its parser and choice() read."""
    return text(locale, "mc_template", question="{question}", choices="{choices}", letters="{letters}")


def question_text(doc: Mapping[str, Any], n_images: int) -> str:
    """The doc's question without its answer clause (the solver lists the options), plus a line that names the
    attached pictures in order (`<image 1>` is the context picture when the item has one)."""
    question = hooks.item_text(doc, with_clause=False)
    if not n_images:
        return question
    names = ", ".join(image_marker(k + 1) for k in range(n_images))
    return f"{question}\n{text(item_locale(doc), 'pictures_attached', pictures=names)}"


def data_uri(image: Image.Image) -> str:
    """A lossless PNG data URI of an image (pixels survive exactly: a scorer sees what lmms-eval models see)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def sample_id(doc: Mapping[str, Any], replicated: bool) -> str:
    """A Sample's id: the item's uid, or `<uid>@seed<k>` when the task asks each item under several option-order
    seeds (`-T orders=K`), so the replicates of one item have distinct ids."""
    return f"{doc['item_uid']}@seed{doc['seed']}" if replicated else str(doc["item_uid"])


def doc_sample(doc: Mapping[str, Any], replicated: bool = False) -> Sample:
    """The Sample of one choice doc (module docstring); `replicated`: its id names its seed (sample_id)."""
    images = hooks.doc_to_visual(doc)
    content: list[ContentText | ContentImage] = [ContentText(text=question_text(doc, len(images)))]
    content += [ContentImage(image=data_uri(image)) for image in images]
    metadata = {key: doc.get(key) for key in DOC_FIELDS}
    metadata["stimulus_image"] = bool(doc.get("stimulus_image"))
    if doc.get("locale"):
        metadata["locale"] = doc["locale"]
    ref = {key: doc[key] for key in ("task", "seed", "variant", "item_uid")}
    return Sample(input=[ChatMessageUser(content=content, metadata={ITEM_KEY: ref})], choices=hooks.choice_labels(doc),
                  target=doc["target_letter"], id=sample_id(doc, replicated), metadata=metadata)
