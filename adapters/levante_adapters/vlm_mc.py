"""`levante_vlm_mc`: one-forward-pass option scorer for generative VLMs (AutoModelForImageTextToText).

After the prompt (chat template + generation prompt), the next-token distribution is read at the option letters
("A" and " A" each count when they are single tokens) and renormalised over the item's letters: per-option
probabilities and the argmax letter from ONE forward pass per item, where lmms-eval's multiple-choice path needs
one pass per option. Batches are left-padded with explicit position ids, so an item scores the same alone or in a
batch. A plain greedy `generate_until` path is available with `mode=generate`.

`scoring=yes_no` (levante-bench's per-option scoring, for models that compare several pictures badly): one pass
per option, asking whether this option is the answer (the question, then only this option's picture or text);
score = logit("Yes") - logit("No") at the next token (each word one token, as levante-bench's logit-forced rule
requires); choice = argmax. The question and the yes/no words are the item's locale's (`core.locale_text`: German
"Ist dieses Bild die Antwort? Antworte mit Ja oder Nein.", logit("Ja") - logit("Nein")). Answers carry
`scores_kind: "yes_no_logit"` and `scoring: "yes_no"`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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
    parse_dtype,
    presented_options,
    question,
    resolve_device,
    score_answer,
    to_images,
)
from levante_adapters.revision import load_revision, resolve_identity, test_model_mark
from levante_tasks.core.locale_text import item_locale, text
from levante_tasks.core.prompts import IMAGE_MARKER, image_marker
from levante_tasks.schema.locales import ENGLISH, Locale

# Families whose rotary positions are computed inside the model from the attention mask (3-D mRoPE).
INTERNAL_POSITION_FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "glm4v")
MODES = ("score", "generate")
MC_MODES = ("one_pass", "continuation")
SCORINGS = ("letters", "yes_no")


def yes_no_words(locale: Locale) -> tuple[str, str]:
    """The next-token words of scoring=yes_no in `locale` (score = logit(yes) - logit(no)): English "Yes", "No"."""
    return text(locale, "yes"), text(locale, "no")


def yes_no_context(stem: str, option: str | None, has_context: bool, locale: Locale = ENGLISH) -> tuple[str, int]:
    """The prompt of one yes/no pass and its picture count: the question (`<image 1>` = the context picture),
    then the option (`option` = its text, or None for a picture option, shown as the next picture), asked in
    `locale`'s words."""
    n_images = int(has_context)
    yes, no = yes_no_words(locale)
    if option is None:
        n_images += 1
        candidate = text(locale, "yes_no_picture", picture=image_marker(n_images), yes=yes, no=no)
    else:
        candidate = text(locale, "yes_no_text", option=option, yes=yes, no=no)
    return f"{stem}\n{candidate}", n_images


def interleave(ctx: str, n_images: int) -> list[dict[str, Any]]:
    """Chat content for a prompt with `<image N>` markers: images where they are referenced.

    Marker rule (levante_tasks.core.prompts, design.md §3b): `<image N>` is visual N-1. Visuals the text never
    references come first, in order; out-of-range markers stay as text.
    """
    referenced = {int(m.group(1)) - 1 for m in IMAGE_MARKER.finditer(ctx)}
    content: list[dict[str, Any]] = [{"type": "image", "index": i} for i in range(n_images) if i not in referenced]
    position = 0
    for match in IMAGE_MARKER.finditer(ctx):
        index = int(match.group(1)) - 1
        if not 0 <= index < n_images:
            continue
        if match.start() > position:
            content.append({"type": "text", "text": ctx[position:match.start()]})
        content.append({"type": "image", "index": index})
        position = match.end()
    if position < len(ctx):
        content.append({"type": "text", "text": ctx[position:]})
    return content


class LevanteVlmMc(lmms):
    """lmms-eval "simple" model: letter scoring in one pass per item, plus plain greedy generation."""

    is_simple = True

    def __init__(
        self,
        pretrained: str,
        device: str | None = "auto",
        dtype: str = "float32",
        batch_size: int | str = 1,
        mode: str = "score",
        mc_mode: str = "one_pass",
        scoring: str = "letters",
        max_new_tokens: int | str = 32,
        model_id: str | None = None,
        revision: str | None = None,
        attn_implementation: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        from transformers import AutoModelForImageTextToText, AutoProcessor

        kwargs.pop("max_batch_size", None)
        if kwargs:
            logger.warning(f"levante_vlm_mc ignores unknown model_args: {sorted(kwargs)}")
        if mode not in MODES or mc_mode not in MC_MODES or scoring not in SCORINGS:
            raise ValueError(f"mode={mode!r}, mc_mode={mc_mode!r}, scoring={scoring!r}: expected mode in {MODES}, "
                             f"mc_mode in {MC_MODES}, scoring in {SCORINGS}")
        self.mode, self.mc_mode, self.scoring = mode, mc_mode, scoring
        self.device = resolve_device(device)
        self.batch_size = as_positive_int(batch_size, "batch_size")
        self.max_new_tokens = as_positive_int(max_new_tokens, "max_new_tokens")
        pinned = load_revision(pretrained, revision)
        self.processor = AutoProcessor.from_pretrained(pretrained, **pinned)
        self.tokenizer = self.processor.tokenizer
        self.tokenizer.padding_side = "left"
        load_kwargs: dict[str, Any] = {"dtype": parse_dtype(dtype), **pinned}
        if attn_implementation:
            load_kwargs["attn_implementation"] = attn_implementation
        self.model = AutoModelForImageTextToText.from_pretrained(pretrained, **load_kwargs)
        self.model = self.model.to(self.device).eval()
        family = str(getattr(self.model.config, "model_type", ""))
        self.explicit_positions = family not in INTERNAL_POSITION_FAMILIES
        self.identity = resolve_identity(
            pretrained, getattr(self.model.config, "_commit_hash", None), model_id, revision
        ) | test_model_mark(self.model.config)
        self.forward_passes = 0
        self._letter_ids: dict[str, list[int]] = {}
        self._yes_no_ids: dict[str, tuple[int, int]] = {}
        logger.info(f"levante_vlm_mc: {self.identity} on {self.device}, mode {mode}, mc_mode {mc_mode}, "
                    f"scoring {scoring}")

    # ---- prompts --------------------------------------------------------------------------------------------
    def build_prompt(self, ctx: str, n_images: int) -> tuple[str, list[int]]:
        """Prompt text (chat template + generation prompt) and the visual indices in the order they appear."""
        content = interleave(ctx, n_images)
        order = [part["index"] for part in content if part["type"] == "image"]
        if getattr(self.processor, "chat_template", None):
            messages = [{"role": "user", "content": [
                {"type": "image"} if part["type"] == "image" else part for part in content]}]
            text = self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        else:
            image_token = getattr(self.processor, "image_token", "<image>")
            text = "".join(image_token if p["type"] == "image" else p["text"] for p in content) + "\nAnswer:"
        return text, order

    def encode_batch(self, prompts: Sequence[str], images: Sequence[Sequence[Any]]) -> dict[str, torch.Tensor]:
        """Processor call for a left-padded batch, with position ids that ignore the padding."""
        kwargs: dict[str, Any] = {"text": list(prompts), "padding": True, "return_tensors": "pt"}
        if any(len(x) for x in images):
            kwargs["images"] = [list(x) for x in images]
        batch = dict(self.processor(**kwargs))
        batch.pop("text_replacement_offsets", None)
        batch = {k: v.to(self.device) for k, v in batch.items() if torch.is_tensor(v)}
        if "pixel_values" in batch:
            batch["pixel_values"] = batch["pixel_values"].to(self.model.dtype)
        if self.explicit_positions:
            batch["position_ids"] = (batch["attention_mask"].long().cumsum(-1) - 1).clamp(min=0)
        return batch

    def letter_token_ids(self, letter: str) -> list[int]:
        """Single-token ids that spell option `letter` (bare and space-prefixed); an error if there is none."""
        if letter not in self._letter_ids:
            ids = []
            for variant in (letter, " " + letter):
                encoded = self.tokenizer.encode(variant, add_special_tokens=False)
                if len(encoded) == 1 and encoded[0] not in ids:
                    ids.append(encoded[0])
            if not ids:
                raise ValueError(f"option letter {letter!r} is not a single token for this tokenizer")
            self._letter_ids[letter] = ids
        return self._letter_ids[letter]

    def _items(self, requests: Sequence[Instance]) -> list[dict[str, Any]]:
        """Per request: doc, prompt text, images in prompt order, letters."""
        items, seen = [], {}
        for request in requests:
            ctx, _, doc_to_visual, doc_id, task, split = request.args[:6]
            if (task, split, doc_id, ctx) in seen:  # multiple_choice: one request per option, same item
                items.append(seen[(task, split, doc_id, ctx)])
                continue
            doc = get_doc(self.task_dict, task, split, doc_id)
            visuals = to_images(doc_to_visual(doc))
            prompt, order = self.build_prompt(ctx, len(visuals))
            n_options = len(doc.get("options") or []) or max(len(visuals) - int(bool(doc.get("stimulus_image"))), 2)
            items.append({"doc": doc, "prompt": prompt, "images": [visuals[i] for i in order], "ctx": ctx,
                          "visuals": visuals, "letters": doc_letters(doc, n_options), "key": (task, split, doc_id)})
            seen[(task, split, doc_id, ctx)] = items[-1]
        return items

    def _batches(self, items: Sequence[dict[str, Any]]) -> list[list[int]]:
        """Index batches of items with the same image count (processors cannot mix image / no-image rows)."""
        groups: dict[int, list[int]] = {}
        for i, item in enumerate(items):
            groups.setdefault(len(item["images"]), []).append(i)
        return [idx[s:s + self.batch_size] for idx in groups.values() for s in range(0, len(idx), self.batch_size)]

    # ---- scoring --------------------------------------------------------------------------------------------
    def next_token_logits(self, items: Sequence[dict[str, Any]]) -> list[torch.Tensor]:
        """Per item (`prompt`, `images`): the float logits of the next token, one forward pass per batch."""
        results: list[torch.Tensor | None] = [None] * len(items)
        for batch_idx in self._batches(items):
            batch = self.encode_batch([items[i]["prompt"] for i in batch_idx], [items[i]["images"] for i in batch_idx])
            with torch.inference_mode():
                logits = self.model(**batch).logits[:, -1, :].float().cpu()
            self.forward_passes += 1
            for row, i in enumerate(batch_idx):
                results[i] = logits[row]
        return results  # type: ignore[return-value]

    def letter_scores(self, items: Sequence[dict[str, Any]]) -> list[tuple[list[float], float]]:
        """Per item: log-probabilities over its letters (renormalised) and the raw letter probability mass."""
        results = []
        for item, logits in zip(items, self.next_token_logits(items), strict=True):
            logprobs = torch.log_softmax(logits, dim=-1)
            per_letter = [float(torch.logsumexp(logprobs[self.letter_token_ids(x)], dim=0)) for x in item["letters"]]
            total = float(torch.logsumexp(torch.tensor(per_letter), dim=0))
            results.append(([v - total for v in per_letter], math.exp(total)))
        return results

    def yes_no_token_ids(self, locale: Locale = ENGLISH) -> tuple[int, int]:
        """The one-token ids of `locale`'s yes/no words; an error naming the word when it is not exactly one token."""
        if locale.code not in self._yes_no_ids:
            ids = []
            for word in yes_no_words(locale):
                encoded = self.tokenizer.encode(word, add_special_tokens=False)
                if len(encoded) != 1:
                    raise ValueError(f"scoring=yes_no: {word!r} ({locale.name}) is {len(encoded)} tokens for this "
                                     "tokenizer, not one")
                ids.append(encoded[0])
            self._yes_no_ids[locale.code] = (ids[0], ids[1])
        return self._yes_no_ids[locale.code]

    def yes_no_passes(self, item: dict[str, Any]) -> list[dict[str, Any]]:
        """One pass per presented option: its prompt (chat template) and pictures (context, then the option's)."""
        doc, visuals, letters = item["doc"], item["visuals"], item["letters"]
        has_context = bool(doc.get("stimulus_image")) and len(visuals) > 0
        context = visuals[:1] if has_context else []
        pictures = visuals[len(context):]
        texts = presented_options(doc)
        stem = question(doc, item["ctx"])
        passes = []
        for k, letter in enumerate(letters):
            picture = len(pictures) == len(letters)
            option = None if picture else (texts[k] if k < len(texts) else letter)
            ctx, n_images = yes_no_context(stem, option, has_context, item_locale(doc))
            prompt, order = self.build_prompt(ctx, n_images)
            shown = [*context, pictures[k]] if picture else context
            passes.append({"prompt": prompt, "images": [shown[i] for i in order]})
        return passes

    def yes_no_scores(self, items: Sequence[dict[str, Any]]) -> list[list[float]]:
        """Per item: logit(yes) - logit(no) (its locale's words) at the next token of each option's pass, in presented
        order."""
        words = [self.yes_no_token_ids(item_locale(item["doc"])) for item in items]
        passes = [self.yes_no_passes(item) for item in items]
        logits = iter(self.next_token_logits([p for item_passes in passes for p in item_passes]))
        return [[float(row[yes] - row[no]) for row in (next(logits) for _ in item_passes)]
                for (yes, no), item_passes in zip(words, passes, strict=True)]

    def option_scores(self, items: Sequence[dict[str, Any]]) -> list[tuple[list[float], dict[str, Any]]]:
        """Per item: the scores of its options as presented, and what the JSON answer says about them."""
        if self.scoring == "yes_no":
            return [(scores, {"scores_kind": "yes_no_logit", "scoring": "yes_no"})
                    for scores in self.yes_no_scores(items)]
        return [(logprobs, {"letter_mass": round(mass, 6)}) for logprobs, mass in self.letter_scores(items)]

    def continuation_nll(self, item: dict[str, Any], continuation: str) -> tuple[float, bool]:
        """lmms-eval's classic path: one forward pass for prompt + continuation; mean NLL of its tokens."""
        n_cont = len(self.tokenizer.encode(continuation, add_special_tokens=False))
        batch = self.encode_batch([item["prompt"] + continuation], [item["images"]])
        with torch.inference_mode():
            logits = self.model(**batch).logits[0, -n_cont - 1:-1, :].float()
        self.forward_passes += 1
        targets = batch["input_ids"][0, -n_cont:]
        logprobs = torch.log_softmax(logits, dim=-1)
        nll = -logprobs.gather(1, targets[:, None]).mean()
        return float(nll), bool((logits.argmax(-1) == targets).all())

    # ---- lmms-eval API --------------------------------------------------------------------------------------
    def generate_until(self, requests: list[Instance]) -> list[str]:
        """mode=score: §3c JSON per item (argmax letter, per-letter log-probs); mode=generate: greedy text."""
        items = self._items(requests)
        if self.mode == "generate":
            return [self._generate(item, request.args[1]) for item, request in zip(items, requests, strict=True)]
        return [score_answer(item["letters"], scores, scorer="levante_vlm_mc", **extra, model=self.identity)
                for item, (scores, extra) in zip(items, self.option_scores(items), strict=True)]

    def _generate(self, item: dict[str, Any], gen_kwargs: dict[str, Any]) -> str:
        """Greedy decoding cut at the first `until` string."""
        gen_kwargs = dict(gen_kwargs or {})
        batch = self.encode_batch([item["prompt"]], [item["images"]])
        batch.pop("position_ids", None)
        max_new = as_positive_int(gen_kwargs.get("max_new_tokens", self.max_new_tokens), "max_new_tokens")
        with torch.inference_mode():
            output = self.model.generate(**batch, max_new_tokens=max_new, do_sample=False,
                                         pad_token_id=self.tokenizer.pad_token_id)
        self.forward_passes += 1
        text = self.tokenizer.decode(output[0, batch["input_ids"].shape[1]:], skip_special_tokens=True)
        until = gen_kwargs.get("until") or []
        for stop in [until] if isinstance(until, str) else until:
            if stop:
                text = text.split(stop)[0]
        return text.strip()

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        """multiple_choice losses (lower = better). one_pass: -log p(letter) from one pass per item (letter
        continuations), or -score with scoring=yes_no; other continuations, and mc_mode=continuation, use one pass
        per option."""
        items = self._items(requests)
        one_pass = {}
        if self.mc_mode == "one_pass":
            unique = {}
            for request, item in zip(requests, items, strict=True):
                if request.args[1].strip() in item["letters"]:
                    unique.setdefault(item["key"], item)
            keys = list(unique)
            one_pass = dict(zip(keys, self.option_scores([unique[k] for k in keys]), strict=True))
        results = []
        for request, item in zip(requests, items, strict=True):
            continuation = request.args[1]
            if item["key"] in one_pass and continuation.strip() in item["letters"]:
                logprobs, _ = one_pass[item["key"]]
                position = choice_position(continuation, request.idx, item["letters"],
                                           presented_options(item["doc"]))
                best = max(range(len(logprobs)), key=lambda i: (logprobs[i], -i))
                results.append((-logprobs[position], position == best))
            else:
                results.append(self.continuation_nll(item, continuation))
        return results

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        """Multi-round dialogue is not part of the LEVANTE tasks."""
        raise NotImplementedError("levante_vlm_mc supports generate_until and multiple_choice only")
