"""levante_clip on tiny random-init CLIP and SigLIP checkpoints: probabilities, task modes, de-duplication,
SigLIP max-length padding, multiple_choice losses, determinism; plus the model identity (revision) rules."""

from __future__ import annotations

import json
import math

import pytest
import torch
from levante_adapters.clip_scorer import LevanteClip
from levante_adapters.revision import resolve_identity

from levante_tasks.testing.adapter_docs import choice_requests, doc_visual_keys, generate_requests, make_docs


@pytest.fixture(scope="module")
def clip_dir(tiny_checkpoint):
    return tiny_checkpoint("clip")


@pytest.fixture(scope="module")
def siglip_dir(tiny_checkpoint):
    return tiny_checkpoint("siglip")


def _scorer(path, docs, **kwargs) -> LevanteClip:
    model = LevanteClip(pretrained=str(path), device="cpu", **kwargs)
    model.task_dict = {"synthetic": {"test": docs}}
    return model


@pytest.mark.parametrize("kind", ["text->images", "image->images", "text->texts"])
def test_generate_until_reports_probabilities_and_argmax_letter(clip_dir, kind):
    docs = make_docs(5, seeds=(0, 1), kind=kind)
    answers = [json.loads(a) for a in _scorer(clip_dir, docs).generate_until(generate_requests(docs))]
    for doc, answer in zip(docs, answers, strict=True):
        assert answer["mode"] == kind
        assert answer["scores_kind"] == "logprob"
        assert list(answer["scores"]) == doc["letters"]
        assert math.isclose(sum(math.exp(v) for v in answer["scores"].values()), 1.0, abs_tol=1e-4)
        assert answer["answer"] == max(answer["scores"], key=answer["scores"].get)


def test_image_query_compares_context_with_options_in_presented_order(clip_dir):
    docs = make_docs(4, seeds=(0, 1, 2), kind="image->images")
    for doc in docs:  # the option at canonical index 2 is the context image itself: cosine 1, the maximum
        doc["option_images"][2] = doc["stimulus_image"]
    answers = [json.loads(a) for a in _scorer(clip_dir, docs).generate_until(generate_requests(docs))]
    expected = [doc["letters"][doc["presented_order"].index(2)] for doc in docs]
    assert [a["answer"] for a in answers] == expected


def test_text_query_matches_identical_text_option(clip_dir):
    docs = make_docs(4, seeds=(0, 1), kind="text->texts")
    for doc in docs:
        doc["options"][1] = doc["prompt_phrase"]
    answers = [json.loads(a) for a in _scorer(clip_dir, docs).generate_until(generate_requests(docs))]
    assert [a["answer"] for a in answers] == [d["letters"][d["presented_order"].index(1)] for d in docs]


def test_each_unique_input_is_encoded_once_across_items_and_seeds(clip_dir):
    docs = make_docs(6, seeds=(0, 1, 2), kind="text->images", pool_size=9)
    model = _scorer(clip_dir, docs, batch_size=4)
    model.generate_until(generate_requests(docs))
    unique_images = {key for doc in docs for key in doc_visual_keys(doc)}
    unique_texts = {doc["prompt_phrase"] for doc in docs}
    assert model.encoded == {"image": len(unique_images), "text": len(unique_texts)}
    assert model.encoder_calls["image"] == math.ceil(len(unique_images) / 4)
    model.loglikelihood(choice_requests(docs))  # everything is cached now
    assert model.encoded == {"image": len(unique_images), "text": len(unique_texts)}


def test_batch_size_and_request_order_do_not_change_scores(clip_dir):
    docs = make_docs(5, seeds=(0, 1), kind="text->images")
    one = [json.loads(a)["scores"] for a in _scorer(clip_dir, docs, batch_size=1).generate_until(
        generate_requests(docs))]
    requests = generate_requests(docs)[::-1]
    many = [json.loads(a)["scores"] for a in _scorer(clip_dir, docs, batch_size=7).generate_until(requests)][::-1]
    for a, b in zip(one, many, strict=True):
        assert a.keys() == b.keys()
        assert all(math.isclose(a[k], b[k], abs_tol=1e-4) for k in a)


def test_results_are_deterministic_across_instances(clip_dir):
    docs = make_docs(4, seeds=(0,), kind="image->images")
    first = _scorer(clip_dir, docs).generate_until(generate_requests(docs))
    assert _scorer(clip_dir, docs).generate_until(generate_requests(docs)) == first


@pytest.mark.parametrize("kind", ["text->texts", "text->images"])
def test_a_reused_instance_scores_a_new_run_as_a_fresh_one(clip_dir, kind):
    """Patch 0019 hands the next run of a `--config` list this instance with its task_dict emptied: what an earlier
    run embedded (in other batches, which move an embedding by ~1e-7) must not serve the new run, so a cell's
    scores do not depend on the runs before it in its process (nor differ when it is rerun alone)."""
    earlier, docs = make_docs(6, seeds=(0, 1), kind=kind), make_docs(2, seeds=(2,), kind=kind)
    reused = _scorer(clip_dir, earlier, batch_size=8)
    reused.generate_until(generate_requests(earlier))
    reused.task_dict = {}  # as patch 0019 hands it over; evaluate() then adds the run's tasks
    reused.task_dict["synthetic"] = {"test": docs}
    fresh = _scorer(clip_dir, docs, batch_size=8)
    assert reused.generate_until(generate_requests(docs)) == fresh.generate_until(generate_requests(docs))


def test_multiple_choice_returns_losses_consistent_with_generate(clip_dir):
    docs = make_docs(4, seeds=(0, 1), kind="text->images")
    model = _scorer(clip_dir, docs)
    answers = [json.loads(a) for a in model.generate_until(generate_requests(docs))]
    losses = model.loglikelihood(choice_requests(docs))
    n = len(docs[0]["letters"])
    for i, answer in enumerate(answers):
        item = losses[i * n:(i + 1) * n]
        assert [-loss for loss, _ in item] == pytest.approx(list(answer["scores"].values()), abs=1e-5)
        best = min(range(n), key=lambda k: item[k][0])
        assert docs[i]["letters"][best] == answer["answer"]
        assert [greedy for _, greedy in item] == [k == best for k in range(n)]


def test_siglip_text_is_padded_to_max_length(siglip_dir):
    model = _scorer(siglip_dir, [])
    assert model.text_padding == "max_length"
    batch = model.tokenize(["cat", "a much longer sentence about a cat"])
    assert batch["input_ids"].shape[1] == model.max_text_length == 16
    with torch.inference_mode():
        alone = model._encode_texts([_ref("cat")])[0]
        batched = model._encode_texts([_ref("cat"), _ref("a much longer sentence about a cat")])[0]
    torch.testing.assert_close(alone, batched, atol=1e-5, rtol=1e-5)


def test_dynamic_padding_would_change_siglip_embeddings(siglip_dir):
    """Why max_length padding matters: with `longest` padding the same text embeds differently per batch."""
    model = _scorer(siglip_dir, [], text_padding="longest")
    with torch.inference_mode():
        alone = model._encode_texts([_ref("cat")])[0]
        batched = model._encode_texts([_ref("cat"), _ref("a much longer sentence about a cat")])[0]
    assert not torch.allclose(alone, batched, atol=1e-3)


def test_siglip_scores_do_not_depend_on_batch_companions(siglip_dir):
    docs = make_docs(6, seeds=(0,), kind="text->texts")
    small = [json.loads(a)["scores"] for a in _scorer(siglip_dir, docs, batch_size=1).generate_until(
        generate_requests(docs))]
    large = [json.loads(a)["scores"] for a in _scorer(siglip_dir, docs, batch_size=32).generate_until(
        generate_requests(docs))]
    for a, b in zip(small, large, strict=True):
        assert all(math.isclose(a[k], b[k], abs_tol=1e-4) for k in a)


def _ref(text: str):
    from levante_adapters.clip_scorer import Ref

    return Ref("text", text)


def test_identity_of_local_folder_is_its_basename_without_revision(clip_dir):
    identity = resolve_identity(str(clip_dir))
    assert identity == {"model_id": "tiny-clip", "revision": "unknown"}


def test_identity_of_hub_cache_snapshot_gives_repo_and_commit(tmp_path):
    commit = "0123456789abcdef0123456789abcdef01234567"
    snapshot = tmp_path / "models--org--clip-b32" / "snapshots" / commit
    snapshot.mkdir(parents=True)
    assert resolve_identity(str(snapshot)) == {"model_id": "org/clip-b32", "revision": commit}


def test_identity_uses_loaded_commit_hash_and_validates_overrides(tmp_path):
    commit = "f" * 40
    assert resolve_identity("org/not-cached-model", commit_hash=commit)["revision"] == commit
    assert resolve_identity("org/not-cached-model", commit_hash="main")["revision"] == "unknown"
    with pytest.raises(ValueError, match="40-character"):
        resolve_identity("org/model", revision="main")
    assert resolve_identity(str(tmp_path), model_id="org/model", revision=commit) == {
        "model_id": "org/model", "revision": commit}


def test_generate_until_records_model_identity(clip_dir):
    docs = make_docs(2, kind="text->images")
    answer = json.loads(_scorer(clip_dir, docs).generate_until(generate_requests(docs))[0])
    assert answer["model"] == {"model_id": "tiny-clip", "revision": "unknown", "test_model": True}  # tiny_models

