"""levante_vlm_mc on a tiny random-init Idefics3 (SmolVLM family): single-token letters, probabilities, one pass
per item, left-padded batches equal single items, determinism, image interleaving, plain generation."""

from __future__ import annotations

import json
import math

import pytest
from levante_adapters.vlm_mc import LevanteVlmMc, interleave

from levante_tasks.testing.adapter_docs import choice_requests, generate_requests, make_docs


@pytest.fixture(scope="module")
def vlm_dir(tiny_checkpoint):
    return tiny_checkpoint("idefics3")


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
        assert answer["model"] == {"model_id": "tiny-vlm", "revision": "unknown", "test_model": True}  # tiny_models


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


def _logit_gap_by_hand(path, content: list[dict], images: list, words: tuple[str, str] = ("Yes", "No")) -> float:
    """logit(yes) - logit(no) of the next token (`words`), computed with the checkpoint's own processor and model."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(path)
    model = AutoModelForImageTextToText.from_pretrained(path).eval()
    text = processor.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True,
                                         tokenize=False)
    inputs = processor(text=[text], images=[images], return_tensors="pt")
    with torch.inference_mode():
        logits = model(**inputs).logits[0, -1].float()
    yes, no = (processor.tokenizer.encode(word, add_special_tokens=False)[0] for word in words)
    return float(logits[yes] - logits[no])


def test_yes_no_scores_are_the_logit_gap_of_one_pass_per_option(vlm_dir):
    """scoring=yes_no on a matrix-like item (context picture, four picture options): each option's score equals
    logit(Yes) - logit(No) computed by hand on [context, that option's picture]; MC losses are -score."""
    from levante_tasks.testing.adapter_docs import make_doc_to_visual

    docs = make_docs(1, kind="image->images")
    model = _scorer(vlm_dir, docs, batch_size=2, scoring="yes_no")
    (answer,) = _scores(model, docs)
    assert model.forward_passes == 2 and answer["scores_kind"] == "yes_no_logit" and answer["scoring"] == "yes_no"
    context, *options = make_doc_to_visual()(docs[0])
    question = [{"type": "image"}, {"type": "text", "text": " Choose the best option.\nCandidate: "}, {"type": "image"},
                {"type": "text", "text": "\nIs this picture the answer? Answer Yes or No."}]
    by_hand = [_logit_gap_by_hand(vlm_dir, question, [context, option]) for option in options]
    assert list(answer["scores"].values()) == pytest.approx(by_hand, abs=1e-5)
    assert len({round(s, 4) for s in by_hand}) == 4  # each pass saw a different picture
    assert answer["answer"] == "ABCD"[max(range(4), key=by_hand.__getitem__)]
    losses = model.loglikelihood(choice_requests(docs))
    assert [loss for loss, _ in losses] == pytest.approx([-s for s in by_hand], abs=1e-5)


def test_yes_no_scoring_of_a_german_item_asks_in_german_and_reads_ja_and_nein(vlm_dir):
    """A German item (doc locale `de`, two picture options after a context picture): each pass asks the German
    question of core.locale_text, and its score is logit("Ja") - logit("Nein") computed by hand (each one token of
    the tiny tokenizer, as every locale's yes/no word is)."""
    from levante_tasks.testing.adapter_docs import make_doc_to_visual

    docs = make_docs(1, n_options=2, kind="image->images")
    docs[0].update(locale="de", question="<image 1> Wähle das Bild, das passt.")
    model = _scorer(vlm_dir, docs, batch_size=2, scoring="yes_no")
    (answer,) = _scores(model, docs)
    assert model.forward_passes == 1 and answer["scores_kind"] == "yes_no_logit"
    context, *options = make_doc_to_visual()(docs[0])
    asked = "\nIst dieses Bild die Antwort? Antworte mit Ja oder Nein."
    question = [{"type": "image"}, {"type": "text", "text": " Wähle das Bild, das passt.\nVorschlag: "},
                {"type": "image"}, {"type": "text", "text": asked}]
    by_hand = [_logit_gap_by_hand(vlm_dir, question, [context, option], ("Ja", "Nein")) for option in options]
    assert list(answer["scores"].values()) == pytest.approx(by_hand, abs=1e-5)
    english = [_logit_gap_by_hand(vlm_dir, question, [context, option]) for option in options]
    assert english != pytest.approx(by_hand, abs=1e-3)  # the German words' logits, not "Yes"/"No"'s


def test_yes_no_words_must_be_single_tokens(tiny_checkpoint):
    from levante_tasks.schema.locales import locale

    model = _scorer(tiny_checkpoint("llava-1.5"), [], scoring="yes_no")
    with pytest.raises(ValueError, match="'Yes' \\(English\\) is 3 tokens"):
        model.yes_no_token_ids()
    with pytest.raises(ValueError, match="'Sí' \\(Spanish \\(Colombia\\)\\) is 3 tokens"):
        model.yes_no_token_ids(locale("es-CO"))
