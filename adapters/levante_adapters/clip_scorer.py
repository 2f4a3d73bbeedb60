"""`levante_clip`: scores LEVANTE items with a contrastive image-text model (CLIP, SigLIP/SigLIP2, ...).

Each item becomes a query and candidates in presented order: text->images (vocab, trog, ToM, same-different
without a reference card), image->images when the item has a context image (matrix, mental rotation), and
image->texts / text->texts for text options (math). Similarities times the model's logit scale give a softmax
over options. Every unique image (by pixel hash) and text is encoded once per run, in batches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from loguru import logger

from levante_adapters.common import (
    as_positive_int,
    choice_position,
    doc_letters,
    get_doc,
    has_context_image,
    image_key,
    log_softmax,
    parse_dtype,
    presented_options,
    query_text,
    resolve_device,
    score_answer,
    to_images,
)
from levante_adapters.revision import load_revision, resolve_identity, test_model_mark

# Model families whose text tower pools a fixed position and was trained on text padded to max_length.
MAX_LENGTH_PADDING_FAMILIES = ("siglip",)


@dataclass(frozen=True)
class Ref:
    """One encoder input: ("image", pixel hash) or ("text", string)."""

    kind: str
    key: str


@dataclass
class ItemPlan:
    """What to compare for one item: a query against candidates in presented order."""

    mode: str
    query: Ref
    candidates: list[Ref]
    letters: list[str]


def _features(output: Any) -> torch.Tensor:
    """get_*_features returns a tensor (transformers 4) or an output with `pooler_output` (transformers 5)."""
    return output if torch.is_tensor(output) else output.pooler_output


class LevanteClip(lmms):
    """lmms-eval "simple" model wrapping any transformers model with `get_image_features`/`get_text_features`."""

    is_simple = True

    def __init__(
        self,
        pretrained: str,
        device: str | None = "auto",
        dtype: str = "float32",
        batch_size: int | str = 32,
        text_padding: str = "auto",
        model_id: str | None = None,
        revision: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        from transformers import AutoModel, AutoProcessor

        kwargs.pop("max_batch_size", None)
        if kwargs:
            logger.warning(f"levante_clip ignores unknown model_args: {sorted(kwargs)}")
        self.device = resolve_device(device)
        self.batch_size = as_positive_int(batch_size, "batch_size")
        pinned = load_revision(pretrained, revision)
        self.processor = AutoProcessor.from_pretrained(pretrained, **pinned)
        self.model = AutoModel.from_pretrained(pretrained, dtype=parse_dtype(dtype), **pinned).to(self.device).eval()
        family = str(getattr(self.model.config, "model_type", ""))
        if text_padding not in ("auto", "max_length", "longest"):
            raise ValueError(f"text_padding={text_padding!r}: expected auto, max_length or longest")
        if text_padding == "auto":
            text_padding = "max_length" if family.startswith(MAX_LENGTH_PADDING_FAMILIES) else "longest"
        self.text_padding = text_padding
        self.max_text_length = self._max_text_length()
        self.identity = resolve_identity(
            pretrained, getattr(self.model.config, "_commit_hash", None), model_id, revision
        ) | test_model_mark(self.model.config)
        self.encoded = {"image": 0, "text": 0}
        self.encoder_calls = {"image": 0, "text": 0}
        logger.info(f"levante_clip: {self.identity} on {self.device}, text padding {self.text_padding}")

    @property
    def task_dict(self) -> dict:
        """The docs of the run being evaluated (lmms-eval fills it per run)."""
        return self._task_dict

    @task_dict.setter
    def task_dict(self, docs: dict) -> None:
        """A new run (built, or reused by patch 0019 for the next run of a `--config` list) starts with no
        embeddings, as a freshly built model does: one taken in an earlier run's batches differs by ~1e-7 and
        would make a cell's scores depend on the runs before it in its process."""
        self._task_dict = docs
        self._embeddings: dict[Ref, torch.Tensor] = {}
        self._images: dict[str, Any] = {}

    def _max_text_length(self) -> int:
        """The text tower's position limit (SigLIP's max_length padding target)."""
        text_config = getattr(self.model.config, "text_config", self.model.config)
        limit = getattr(text_config, "max_position_embeddings", None)
        tokenizer_limit = getattr(self.processor.tokenizer, "model_max_length", None)
        candidates = [x for x in (limit, tokenizer_limit) if isinstance(x, int) and 0 < x < 100_000]
        return min(candidates) if candidates else 77

    @property
    def logit_scale(self) -> float:
        """exp(logit_scale) of the checkpoint: the temperature that turns similarities into option logits."""
        scale = getattr(self.model, "logit_scale", None)
        return float(scale.detach().exp()) if scale is not None else 100.0

    # ---- planning -------------------------------------------------------------------------------------------
    def plan(self, doc: dict, visuals: Any, ctx: str = "") -> ItemPlan | None:
        """Turn one doc and its doc_to_visual output into a query/candidates plan; None for slider items."""
        if doc.get("response_format") == "slider":
            return None
        images = to_images(visuals)
        refs = []
        for image in images:
            key = image_key(image)
            self._images.setdefault(key, image)
            refs.append(Ref("image", key))
        context = refs[0] if has_context_image(doc) and refs else None
        image_options = refs[1:] if context is not None else refs
        if doc.get("option_kind") == "text" or not image_options:
            candidates = [Ref("text", text) for text in presented_options(doc)]
            target = "texts"
        else:
            candidates, target = image_options, "images"
        query = context if context is not None else Ref("text", query_text(doc, ctx))
        if not candidates:
            raise ValueError(f"item {doc.get('item_uid')!r} has no options to score")
        return ItemPlan(f"{query.kind}->{target}", query, candidates, doc_letters(doc, len(candidates)))

    # ---- encoding -------------------------------------------------------------------------------------------
    def encode(self, refs: Sequence[Ref]) -> None:
        """Encode every not-yet-seen ref, in batches of `batch_size`, L2-normalised, kept on CPU in float32."""
        pending = list(dict.fromkeys(r for r in refs if r not in self._embeddings))
        for kind in ("image", "text"):
            todo = [r for r in pending if r.kind == kind]
            for start in range(0, len(todo), self.batch_size):
                chunk = todo[start:start + self.batch_size]
                with torch.inference_mode():
                    feats = self._encode_images(chunk) if kind == "image" else self._encode_texts(chunk)
                feats = torch.nn.functional.normalize(feats.float(), dim=-1).cpu()
                self.encoder_calls[kind] += 1
                self.encoded[kind] += len(chunk)
                for ref, feat in zip(chunk, feats, strict=True):
                    self._embeddings[ref] = feat
                    if kind == "image":
                        self._images.pop(ref.key, None)

    def _encode_images(self, refs: Sequence[Ref]) -> torch.Tensor:
        """Image-tower features for a batch of cached images."""
        batch = self.processor.image_processor(images=[self._images[r.key] for r in refs], return_tensors="pt")
        pixel_values = batch["pixel_values"].to(self.device, dtype=self.model.dtype)
        extra = {k: v.to(self.device) for k, v in batch.items() if k != "pixel_values"}
        return _features(self.model.get_image_features(pixel_values=pixel_values, **extra))

    def _encode_texts(self, refs: Sequence[Ref]) -> torch.Tensor:
        """Text-tower features; SigLIP-family text is padded to max_length (its pooled token depends on it)."""
        batch = self.tokenize([r.key for r in refs])
        return _features(self.model.get_text_features(**{k: v.to(self.device) for k, v in batch.items()}))

    def tokenize(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        """Tokenize with this model's padding rule (max_length for SigLIP, longest otherwise), truncating."""
        padding = "max_length" if self.text_padding == "max_length" else "longest"
        batch = self.processor.tokenizer(
            list(texts), padding=padding, truncation=True, max_length=self.max_text_length, return_tensors="pt"
        )
        names = set(getattr(self.processor.tokenizer, "model_input_names", ["input_ids", "attention_mask"]))
        return {k: v for k, v in batch.items() if k in names & {"input_ids", "attention_mask"}}

    # ---- scoring --------------------------------------------------------------------------------------------
    def option_logprobs(self, plan: ItemPlan) -> list[float]:
        """log softmax over options of logit_scale * cosine(query, candidate), in presented order."""
        query = self._embeddings[plan.query]
        sims = [float(query @ self._embeddings[c]) for c in plan.candidates]
        return log_softmax([self.logit_scale * s for s in sims])

    def score_plans(self, plans: Sequence[ItemPlan | None]) -> list[list[float] | None]:
        """Encode all unique inputs of all plans at once, then score each plan."""
        refs = [r for p in plans if p is not None for r in (p.query, *p.candidates)]
        self.encode(refs)
        return [self.option_logprobs(p) if p is not None else None for p in plans]

    def _plans(self, requests: Sequence[Instance]) -> list[ItemPlan | None]:
        """One plan per request (planned once per doc), from the request's doc and doc_to_visual."""
        by_doc: dict[tuple, ItemPlan | None] = {}
        plans = []
        for request in requests:
            ctx, _, doc_to_visual, doc_id, task, split = request.args[:6]
            key = (task, split, doc_id)
            if key not in by_doc:
                doc = get_doc(self.task_dict, task, split, doc_id)
                by_doc[key] = self.plan(dict(doc), doc_to_visual(doc), ctx)
            plans.append(by_doc[key])
        return plans

    # ---- lmms-eval API --------------------------------------------------------------------------------------
    def generate_until(self, requests: list[Instance]) -> list[str]:
        """Answer each item with the §3c JSON (argmax letter + per-letter log-probs); "" for slider items."""
        plans = self._plans(requests)
        scores = self.score_plans(plans)
        answers = []
        for plan, logprobs in zip(plans, scores, strict=True):
            if plan is None:
                answers.append("")
                continue
            answers.append(score_answer(plan.letters, logprobs, scorer="levante_clip", mode=plan.mode,
                                        model=self.identity))
        return answers

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        """multiple_choice: one request per option; return (-log p(option), is argmax) - a loss, lower = better."""
        plans = self._plans(requests)
        scores = self.score_plans(plans)
        results = []
        for request, plan, logprobs in zip(requests, plans, scores, strict=True):
            if plan is None:
                raise ValueError("levante_clip cannot score slider items as multiple choice")
            doc = get_doc(self.task_dict, request.args[4], request.args[5], request.args[3])
            position = choice_position(request.args[1], request.idx, plan.letters, presented_options(doc))
            best = max(range(len(logprobs)), key=lambda i: (logprobs[i], -i))
            results.append((-logprobs[position], position == best))
        return results

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        """Not meaningful for a contrastive scorer."""
        raise NotImplementedError("levante_clip supports generate_until and multiple_choice only")
