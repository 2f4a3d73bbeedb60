"""`levante-tiny/clip`, `levante-tiny/vlm` and `levante-tiny/reply`: offline inspect_ai model APIs around the
`levante_clip` and `levante_vlm_mc` adapters, and one that always answers the same text (test doubles). The name
`levante-tiny` is registered by the package's inspect_ai entry point (`levante_tasks._registry`, which imports this
module only when a levante-tiny model is made), so `inspect eval ... --model levante-tiny/clip` works from inspect's
CLI and from `inspect_ai.eval` alike.

clip answers each LEVANTE sample exactly as the lmms-eval adapter does, with the adapter's own code: the item's
doc is rebuilt by `levante_tasks.core.docs.task_docs` from the sample message's `levante_item_ref` (task, seed,
variant, item_uid), the pictures are the ones the message carries (decoded from their data URIs), and
`LevanteClip.plan` / `score_plans` / `score_answer` give the choice and the per-letter log-probabilities.
vlm reads the message as a chat model would (its text and pictures in their order, through the processor's chat
template) and scores the item's letters with `LevanteVlmMc.letter_scores` (one forward pass): a deterministic
generative model that sees what an inspect provider sends (so its prompt, unlike clip's query, is inspect's).
The completion is `ANSWER: <letter>` (what inspect's multiple_choice() and choice() read); the §3c JSON answer goes
to `output.metadata["levante_answer"]` for the record scorer. Model args (`-M`): `pretrained=<checkpoint folder>`
(`build_tiny_clip`, `build_tiny_vlm`), plus any argument of the adapter (device, batch_size, model_id, revision).
reply answers every sample with `-M reply=<text>` as its completion and no JSON answer (a prose-answering or
format-breaking model, for the parser and the scorers).
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Mapping
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageUser,
    ContentImage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
)
from inspect_ai.tool import ToolChoice, ToolInfo
from PIL import Image

from levante_tasks.inspect.samples import ITEM_KEY
from levante_tasks.inspect.scorer import ANSWER_KEY

KINDS = ("clip", "vlm", "reply")
DEFAULT_CONFIG = GenerateConfig()


def decode_image(uri: str) -> Image.Image:
    """A PIL image from a `data:image/...;base64,` URI (what the LEVANTE samples carry)."""
    header, _, payload = uri.partition(",")
    if not header.startswith("data:image/") or not header.endswith(";base64"):
        raise ValueError(f"levante-tiny reads data-URI images only, got {header[:40]!r}")
    with Image.open(io.BytesIO(base64.b64decode(payload))) as image:
        return image.convert("RGB")


def item_message(messages: list[ChatMessage]) -> ChatMessageUser:
    """The user message that carries the LEVANTE item reference."""
    for message in messages:
        if isinstance(message, ChatMessageUser) and ITEM_KEY in (message.metadata or {}):
            return message
    raise ValueError(f"levante-tiny answers LEVANTE samples only (no user message with {ITEM_KEY!r} metadata)")


class LevanteTinyAPI(ModelAPI):
    """The `levante_clip` or `levante_vlm_mc` scorer, or a fixed reply, behind inspect's ModelAPI (module docstring)."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig = DEFAULT_CONFIG, **model_args: Any) -> None:
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config)
        if model_name not in KINDS:
            raise ValueError(f"levante-tiny/{model_name}: expected one of {', '.join(KINDS)}")
        if model_name == "reply":
            self.reply = str(model_args.get("reply", ""))
            return
        if not model_args.get("pretrained"):
            raise ValueError(f"levante-tiny/{model_name} needs -M pretrained=<checkpoint folder>")
        from levante_adapters.clip_scorer import LevanteClip
        from levante_adapters.vlm_mc import LevanteVlmMc

        adapter = LevanteClip if model_name == "clip" else LevanteVlmMc
        self.scorer = adapter(**{"device": "cpu", **model_args})
        self._docs: dict[tuple[str, int, str], dict[str, Mapping[str, Any]]] = {}

    def _doc(self, ref: Mapping[str, Any]) -> Mapping[str, Any]:
        """The task doc of a referenced item, from the same builder the lmms-eval task uses (cached per variant)."""
        from levante_tasks.core import docs

        key = (str(ref["task"]), int(ref["seed"]), str(ref["variant"]))
        if key not in self._docs:
            built = docs.task_docs(key[0], seed=key[1], variant=key[2], choice_only=True)
            self._docs[key] = {d["item_uid"]: d for d in built}
        return self._docs[key][str(ref["item_uid"])]

    def answer(self, messages: list[ChatMessage]) -> str:
        """The §3c JSON answer of the wrapped adapter to the item in `messages`."""
        message = item_message(messages)
        doc = dict(self._doc((message.metadata or {})[ITEM_KEY]))
        images = [decode_image(part.image) for part in message.content if isinstance(part, ContentImage)]
        return self._clip_answer(doc, images) if self.model_name == "clip" else self._vlm_answer(doc, message, images)

    def _clip_answer(self, doc: dict[str, Any], images: list[Image.Image]) -> str:
        """levante_clip's plan and scores for the doc, on the message's pictures."""
        from levante_adapters.common import score_answer

        from levante_tasks.core.hooks import doc_to_text

        plan = self.scorer.plan(doc, images, doc_to_text(doc))
        if plan is None:
            raise ValueError(f"levante-tiny/clip cannot answer slider item {doc['item_uid']!r}")
        (logprobs,) = self.scorer.score_plans([plan])
        return score_answer(plan.letters, logprobs, scorer="levante_clip", mode=plan.mode, model=self.scorer.identity)

    def _vlm_answer(self, doc: dict[str, Any], message: ChatMessageUser, images: list[Image.Image]) -> str:
        """levante_vlm_mc's letter scores for the message as a chat model reads it (text and pictures in order)."""
        from levante_adapters.common import score_answer

        parts = [{"type": "image"} if isinstance(part, ContentImage) else {"type": "text", "text": part.text}
                 for part in message.content if isinstance(part, ContentImage) or part.type == "text"]
        prompt = self.scorer.processor.apply_chat_template([{"role": "user", "content": parts}],
                                                           add_generation_prompt=True, tokenize=False)
        item = {"prompt": prompt, "images": images, "letters": list(doc["letters"])}
        ((logprobs, mass),) = self.scorer.letter_scores([item])
        return score_answer(item["letters"], logprobs, scorer="levante_vlm_mc", letter_mass=round(mass, 6),
                            model=self.scorer.identity)

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
                       config: GenerateConfig) -> ModelOutput:
        """`ANSWER: <letter>` as the completion, the JSON answer with per-letter scores in the metadata (reply: the
        fixed text alone)."""
        if self.model_name == "reply":
            return ModelOutput.from_content(model="levante-tiny/reply", content=self.reply)
        answer = self.answer(input)
        output = ModelOutput.from_content(model=f"levante-tiny/{self.model_name}",
                                          content=f"ANSWER: {json.loads(answer)['answer']}")
        output.metadata = {ANSWER_KEY: answer}
        return output
