"""Offline builders of random-init CLIP, SigLIP and Idefics3 (SmolVLM) checkpoints with working processors.

No weights or hub files are needed: tokenizers are byte-level BPE models assembled in code, image processors come
from their default classes, and models from transformers configs. Tests use the `tiny` sizes (< 10 s each on CPU);
the benchmark uses real-size shapes (ViT-B/32 CLIP, SmolVLM-256M) with the same code.
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
from tokenizers.pre_tokenizers import ByteLevel

from levante_tasks.schema.items import LETTERS  # single tokens, with and without a leading space
from levante_tasks.schema.markers import TEST_MODEL_CONFIG_KEY

# SmolVLM's chat template (Idefics3 family): "User:<image>text<end_of_utterance>\nAssistant:".
SMOLVLM_CHAT_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{message['role'] | capitalize}}"
    "{% if message['content'][0]['type'] == 'image' %}{{':'}}{% else %}{{': '}}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{line['text']}}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n"
    "{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)


def _byte_level_tokenizer(specials: list[str], bos: str | None, eos: str | None) -> Tokenizer:
    """A byte-level BPE covering every string: 256 byte symbols, plus merges that make " A".." H" one token."""
    alphabet = sorted(ByteLevel.alphabet())
    vocab: dict[str, int] = {}
    for token in [*specials, *alphabet]:
        vocab.setdefault(token, len(vocab))
    merges = [("Ġ", letter) for letter in LETTERS]
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(specials)
    single, pair, special_ids = "$A", "$A $B", []
    if bos:
        single, pair = f"{bos} {single}", f"{bos} {pair}"
        special_ids.append((bos, vocab[bos]))
    if eos:
        single, pair = f"{single} {eos}", f"{pair} {eos}"
        special_ids.append((eos, vocab[eos]))
    if special_ids:
        tok.post_processor = processors.TemplateProcessing(single=single, pair=pair, special_tokens=special_ids)
    return tok


def _fast_tokenizer(tok: Tokenizer, **kwargs: object):
    """Wrap a `tokenizers` object as a transformers fast tokenizer (saved as tokenizer.json)."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


def _save(model: torch.nn.Module, processor: object, out_dir: str | Path) -> Path:
    """Save model + processor side by side, as a hub snapshot would hold them; config.json marks the checkpoint
    as a random-init test model (schema.markers.TEST_MODEL_CONFIG_KEY), which the adapters report."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    setattr(model.config, TEST_MODEL_CONFIG_KEY, "random-init test model (levante_tasks.testing.tiny_models)")
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def build_tiny_clip(out_dir: str | Path, size: str = "tiny", seed: int = 0) -> Path:
    """Build and save a random-init CLIP (`tiny`, or `vit-b-32` = the ViT-B/32 shape) with a CLIPProcessor."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    specials = ["<|startoftext|>", "<|endoftext|>", "<pad>"]
    tok = _byte_level_tokenizer(specials, bos="<|startoftext|>", eos="<|endoftext|>")
    tokenizer = _fast_tokenizer(
        tok, bos_token="<|startoftext|>", eos_token="<|endoftext|>", pad_token="<pad>", model_max_length=77
    )
    ids = {t: tok.token_to_id(t) for t in specials}
    common_text = dict(
        bos_token_id=ids["<|startoftext|>"], eos_token_id=ids["<|endoftext|>"], pad_token_id=ids["<pad>"]
    )
    if size == "tiny":
        text = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)
        vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                      image_size=32, patch_size=8)
        projection, image_size = 16, 32
    elif size == "vit-b-32":
        text = dict(hidden_size=512, intermediate_size=2048, num_hidden_layers=12, num_attention_heads=8)
        vision = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                      image_size=224, patch_size=32)
        projection, image_size = 512, 224
    else:
        raise ValueError(f"unknown CLIP size {size!r}")
    config = CLIPConfig(
        text_config=dict(vocab_size=tok.get_vocab_size(), max_position_embeddings=77, **text, **common_text),
        vision_config=vision,
        projection_dim=projection,
    )
    torch.manual_seed(seed)
    model = CLIPModel(config).eval()
    image_processor = CLIPImageProcessor(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}
    )
    return _save(model, CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer), out_dir)


def build_tiny_siglip(out_dir: str | Path, seed: int = 0, max_length: int = 16) -> Path:
    """Build and save a random-init SigLIP whose text tower pools the LAST position, like the real checkpoints.

    The tokenizer appends `</s>` and pads with it (as SigLIP's does), so padding length changes the pooled token:
    the reason scorers must pad SigLIP text to `max_length`.
    """
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel, SiglipProcessor

    specials = ["<pad>", "</s>", "<unk>"]
    tok = _byte_level_tokenizer(specials, bos=None, eos="</s>")
    tokenizer = _fast_tokenizer(
        tok, eos_token="</s>", pad_token="</s>", unk_token="<unk>", model_max_length=max_length,
        model_input_names=["input_ids"],  # like SiglipTokenizer: the text tower gets no attention mask
    )
    config = SiglipConfig(
        text_config=dict(vocab_size=tok.get_vocab_size(), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=max_length,
                         pad_token_id=tok.token_to_id("</s>"), eos_token_id=tok.token_to_id("</s>"),
                         bos_token_id=tok.token_to_id("<unk>")),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                           image_size=32, patch_size=8),
    )
    torch.manual_seed(seed)
    model = SiglipModel(config).eval()
    image_processor = SiglipImageProcessor(size={"height": 32, "width": 32})
    return _save(model, SiglipProcessor(image_processor=image_processor, tokenizer=tokenizer), out_dir)


def build_tiny_vlm(out_dir: str | Path, size: str = "tiny", seed: int = 0) -> Path:
    """Build and save a random-init Idefics3 (SmolVLM v1 family) with an Idefics3Processor and chat template.

    `size="tiny"`: 32-px images, 4 image tokens, 2-layer Llama (fast tests). `size="smolvlm-256m"`: the
    SmolVLM-256M shapes (512-px SigLIP-B/16 tower, 64 image tokens, 30-layer 576-wide Llama, 49280 vocab).
    """
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessor, Idefics3Processor

    row_col = [f"<row_{i + 1}_col_{j + 1}>" for i in range(6) for j in range(6)]
    specials = ["<|endoftext|>", "<|im_start|>", "<end_of_utterance>", "<fake_token_around_image>", "<image>",
                "<global-img>", *row_col]
    tok = _byte_level_tokenizer(specials, bos=None, eos=None)
    tokenizer = _fast_tokenizer(
        tok, bos_token="<|im_start|>", eos_token="<end_of_utterance>", pad_token="<|endoftext|>",
        model_max_length=8192, extra_special_tokens={"image_token": "<image>"},
    )
    tokenizer.padding_side = "left"
    if size == "tiny":
        text = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, vocab_size=tok.get_vocab_size())
        vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                      image_size=32, patch_size=8)
        scale_factor = 2
    elif size == "smolvlm-256m":
        text = dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                    num_key_value_heads=3, vocab_size=49280)
        vision = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                      image_size=512, patch_size=16)
        scale_factor = 4
    else:
        raise ValueError(f"unknown VLM size {size!r}")
    image_seq_len = (vision["image_size"] // vision["patch_size"]) ** 2 // scale_factor**2
    config = Idefics3Config(
        vision_config=vision,
        text_config=dict(model_type="llama", max_position_embeddings=8192, rms_norm_eps=1e-5,
                         pad_token_id=tok.token_to_id("<|endoftext|>"), tie_word_embeddings=False, **text),
        scale_factor=scale_factor,
        image_token_id=tok.token_to_id("<image>"),
        pad_token_id=tok.token_to_id("<|endoftext|>"),
    )
    torch.manual_seed(seed)
    model = Idefics3ForConditionalGeneration(config).eval()
    edge = vision["image_size"]
    image_processor = Idefics3ImageProcessor(
        do_image_splitting=False, size={"longest_edge": edge}, max_image_size={"longest_edge": edge}
    )
    processor = Idefics3Processor(
        image_processor=image_processor, tokenizer=tokenizer, image_seq_len=image_seq_len,
        chat_template=SMOLVLM_CHAT_TEMPLATE,
    )
    return _save(model, processor, out_dir)
