"""levante_vlm_mc on a tiny random-init Idefics3 (SmolVLM family): single-token letters, probabilities, one pass
per item, left-padded batches equal single items, determinism, image interleaving, plain generation."""

from __future__ import annotations

import json
import math

import pytest
from levante_adapters.vlm_mc import LevanteVlmMc, interleave

from levante_tasks.testing.adapter_docs import choice_requests, generate_requests, make_docs
from levante_tasks.testing.tiny_models import build_tiny_vlm


@pytest.fixture(scope="module")
def vlm_dir(tmp_path_factory):
    return build_tiny_vlm(tmp_path_factory.mktemp("vlm") / "tiny-vlm")


def _docs(n: int = 5, seeds=(0, 1), kind: str = "text->images"):
    docs = make_docs(n, seeds=seeds, kind=kind)
    for i, doc in enumerate(docs):  # prompts of different lengths, so batches need padding
        doc["prompt_phrase"] = "word " * (1 + 3 * (i % 3)) + str(i)
    return docs


def _scorer(path, docs, **kwargs) -> LevanteVlmMc:
    model = LevanteVlmMc(pretrained=str(path), device="cpu", **kwargs)
    model.task_dict = {"synthetic": {"test": docs}}
    return model


def _scores(model, docs):
    return [json.loads(a) for a in model.generate_until(generate_requests(docs))]


def test_option_letters_are_distinct_single_tokens(vlm_dir):
    model = _scorer(vlm_dir, [])
    seen = set()
    for letter in "ABCD":
        ids = model.letter_token_ids(letter)
        assert ids and not seen & set(ids)
        seen |= set(ids)
        for token_id in ids:
            assert model.tokenizer.decode([token_id]).strip() == letter
            assert len(model.tokenizer.encode(model.tokenizer.decode([token_id]), add_special_tokens=False)) == 1


def test_multi_token_letter_is_rejected(vlm_dir):
    with pytest.raises(ValueError, match="single token"):
        _scorer(vlm_dir, []).letter_token_ids("AB")


@pytest.mark.parametrize("kind", ["text->images", "image->images", "text->texts"])
def test_probabilities_sum_to_one_with_one_pass_per_item(vlm_dir, kind):
    docs = _docs(kind=kind)
    model = _scorer(vlm_dir, docs, batch_size=1)
    answers = _scores(model, docs)
    assert model.forward_passes == len(docs)
    for doc, answer in zip(docs, answers, strict=True):
        assert list(answer["scores"]) == doc["letters"]
        assert math.isclose(sum(math.exp(v) for v in answer["scores"].values()), 1.0, abs_tol=1e-4)
        assert answer["answer"] == max(answer["scores"], key=answer["scores"].get)
        assert 0.0 < answer["letter_mass"] <= 1.0
        assert answer["model"] == {"model_id": "tiny-vlm", "revision": "unknown"}


def test_item_scores_the_same_alone_and_inside_a_left_padded_batch(vlm_dir):
    docs = _docs(6, seeds=(0,))
    alone = _scores(_scorer(vlm_dir, docs, batch_size=1), docs)
    batched_model = _scorer(vlm_dir, docs, batch_size=6)
    batched = _scores(batched_model, docs)
    assert batched_model.forward_passes == 1
    for a, b in zip(alone, batched, strict=True):
        assert a["scores"] == pytest.approx(b["scores"], abs=1e-4)


def test_results_are_deterministic(vlm_dir):
    docs = _docs(4, seeds=(0,), kind="image->images")
    first = _scorer(vlm_dir, docs, batch_size=2).generate_until(generate_requests(docs))
    assert _scorer(vlm_dir, docs, batch_size=2).generate_until(generate_requests(docs)) == first


def test_multiple_choice_one_pass_matches_generate_scores(vlm_dir):
    docs = _docs(4, seeds=(0, 1))
    model = _scorer(vlm_dir, docs, batch_size=4)
    answers = _scores(model, docs)
    model.forward_passes = 0
    losses = model.loglikelihood(choice_requests(docs))
    assert model.forward_passes == math.ceil(len(docs) / 4)
    n = len(docs[0]["letters"])
    for i, answer in enumerate(answers):
        item = losses[i * n:(i + 1) * n]
        assert [-loss for loss, _ in item] == pytest.approx(list(answer["scores"].values()), abs=1e-4)
        assert sum(greedy for _, greedy in item) == 1


def test_continuation_mode_needs_one_pass_per_option(vlm_dir):
    docs = _docs(3, seeds=(0,))
    model = _scorer(vlm_dir, docs, mc_mode="continuation")
    losses = model.loglikelihood(choice_requests(docs))
    assert model.forward_passes == sum(len(d["options"]) for d in docs)
    assert all(loss > 0 for loss, _ in losses)


def test_continuation_nll_equals_one_pass_token_logprob(vlm_dir):
    """For a single-token continuation " A" the per-option path and the next-token distribution agree."""
    import torch

    docs = _docs(1, seeds=(0,))
    model = _scorer(vlm_dir, docs)
    item = model._items(generate_requests(docs))[0]
    nll, _ = model.continuation_nll(item, " A")
    batch = model.encode_batch([item["prompt"]], [item["images"]])
    with torch.inference_mode():
        logprobs = torch.log_softmax(model.model(**batch).logits[0, -1].float(), dim=-1)
    (token,) = model.tokenizer.encode(" A", add_special_tokens=False)
    assert nll == pytest.approx(-float(logprobs[token]), abs=1e-4)


def test_generate_mode_returns_plain_text(vlm_dir):
    docs = _docs(2, seeds=(0,))
    model = _scorer(vlm_dir, docs, mode="generate", max_new_tokens=4)
    outputs = model.generate_until(generate_requests(docs))
    assert len(outputs) == 2 and all(isinstance(o, str) for o in outputs)
    assert all(not o.startswith("{") for o in outputs)


def test_interleave_follows_the_image_index_rule():
    with_context = interleave("<image 1> Pick. A: <image 2>; B: <image 3>", 3)
    assert [p["index"] for p in with_context if p["type"] == "image"] == [0, 1, 2]
    assert with_context[1] == {"type": "text", "text": " Pick. A: "}
    without = interleave("Pick. A: <image 1>; B: <image 2>", 2)
    assert [p["index"] for p in without if p["type"] == "image"] == [0, 1]
    assert without[0] == {"type": "text", "text": "Pick. A: "}
    unreferenced = interleave("Which one? Answer A or B.", 2)
    assert unreferenced == [{"type": "image", "index": 0}, {"type": "image", "index": 1},
                            {"type": "text", "text": "Which one? Answer A or B."}]


def test_prompt_puts_each_image_at_its_placeholder(vlm_dir):
    model = _scorer(vlm_dir, [])
    text, order = model.build_prompt("<image 1> Fill. A: <image 2>; B: <image 3>", 3)
    assert order == [0, 1, 2]
    assert text.count("<image>") == 3 and text.index("<image>") < text.index("Fill")
    assert text.endswith("Assistant:")
