"""Offline builders of random-init CLIP, SigLIP, Idefics3 (SmolVLM), Qwen2-VL, Qwen2.5-VL, Idefics2, LLaVA-1.5 and
LLaVA-OneVision checkpoints with working processors.

No weights or hub files are needed: tokenizers are byte-level BPE models assembled in code, image processors come
from their default classes, and models from transformers configs. Tests use the `tiny` sizes (< 10 s each on CPU);
the benchmarks use real-size shapes (ViT-B/32 CLIP, SmolVLM-256M, Qwen2-VL-2B) with the same code; the generative
families serve the model-class compatibility suite (tests/test_compat_models.py, docs/compatibility.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
from tokenizers.pre_tokenizers import ByteLevel

from levante_tasks.core.locale_text import text
from levante_tasks.schema.items import LETTERS  # single tokens, with and without a leading space
from levante_tasks.schema.locales import LOCALES
from levante_tasks.schema.markers import TEST_MODEL_CONFIG_KEY

# SmolVLM's chat template (Idefics3 family): "User:<image>text<end_of_utterance>\nAssistant:".
SMOLVLM_CHAT_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{message['role'] | capitalize}}"
    "{% if message['content'][0]['type'] == 'image' %}{{':'}}{% else %}{{': '}}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{line['text']}}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n"
    "{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)


# scoring=yes_no's next-token words: English "Yes"/"No" first, then every locale's (core.locale_text)
YES_NO_WORDS = tuple(dict.fromkeys(text(loc, key) for loc in LOCALES for key in ("yes", "no")))


def _byte_symbols(word: str) -> str:
    """`word` in the byte-level alphabet (each UTF-8 byte one symbol: "Sí" is three), as the BPE merges see it."""
    return "".join(piece for piece, _ in pre_tokenizers.ByteLevel(add_prefix_space=False).pre_tokenize_str(word))


def _byte_level_tokenizer(specials: list[str], bos: str | None, eos: str | None,
                          words: Sequence[str] = ()) -> Tokenizer:
    """A byte-level BPE covering every string: 256 byte symbols, plus merges that make " A".." H" and each of
    `words` one token."""
    alphabet = sorted(ByteLevel.alphabet())
    vocab: dict[str, int] = {}
    for token in [*specials, *alphabet]:
        vocab.setdefault(token, len(vocab))
    merges = [("Ġ", letter) for letter in LETTERS]
    symbols = [_byte_symbols(word) for word in words]
    merges += list(dict.fromkeys((word[:end], word[end]) for word in symbols for end in range(1, len(word))))
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


def _random_init(model_cls: type, config: object, dtype: torch.dtype) -> torch.nn.Module:
    """A random-init model in eval mode; float32 is built as the tests always built it (same weights per seed),
    another dtype is initialised in that dtype (a real-size model never exists in float32: half the memory)."""
    if dtype == torch.float32:
        return model_cls(config).eval()
    return model_cls._from_config(config, dtype=dtype).eval()


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


def build_tiny_vlm(out_dir: str | Path, size: str = "tiny", seed: int = 0, dtype: torch.dtype = torch.float32) -> Path:
    """Build and save a random-init Idefics3 (SmolVLM v1 family) with an Idefics3Processor and chat template.

    `size="tiny"`: 32-px images, 4 image tokens, 2-layer Llama (fast tests). `size="smolvlm-256m"`: the
    SmolVLM-256M shapes (512-px SigLIP-B/16 tower, 64 image tokens, 30-layer 576-wide Llama, 49280 vocab), one
    512-px tile per picture (the published processor also splits large pictures into tiles). `dtype`: of the
    saved weights.
    """
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessor, Idefics3Processor

    row_col = [f"<row_{i + 1}_col_{j + 1}>" for i in range(6) for j in range(6)]
    specials = ["<|endoftext|>", "<|im_start|>", "<end_of_utterance>", "<fake_token_around_image>", "<image>",
                "<global-img>", *row_col]
    tok = _byte_level_tokenizer(specials, bos=None, eos=None, words=YES_NO_WORDS)  # scoring=yes_no, every locale
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
    model = _random_init(Idefics3ForConditionalGeneration, config, dtype)
    edge = vision["image_size"]
    image_processor = Idefics3ImageProcessor(
        do_image_splitting=False, size={"longest_edge": edge}, max_image_size={"longest_edge": edge}
    )
    processor = Idefics3Processor(
        image_processor=image_processor, tokenizer=tokenizer, image_seq_len=image_seq_len,
        chat_template=SMOLVLM_CHAT_TEMPLATE,
    )
    return _save(model, processor, out_dir)


def chat_template(user: str, assistant: str, end: str, image: str, separator: str = "") -> str:
    """A Jinja chat template: `<user>` + text and `image` markers in content order + `end` per turn, then
    `assistant` as the generation prompt (the layout of the checkpoints' own templates, much shortened)."""
    return (
        "{% for message in messages %}"
        "{% if message['role'] == 'user' %}" + user.replace("'", "\\'").join(["{{ '", "' }}"]) + "{% else %}"
        + assistant.replace("'", "\\'").join(["{{ '", "' }}"]) + "{% endif %}"
        "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
        "{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}"
        "{% elif part['type'] == 'image' or part['type'] == 'image_url' %}{{ '" + image + "' }}"
        "{% endif %}{% endfor %}{% endif %}{{ '" + end.replace("\n", "\\n") + "' }}{% endfor %}"
        "{% if add_generation_prompt %}" + assistant.replace("'", "\\'").join(["{{ '", "' }}"]) + "{% endif %}"
    ).replace("{{ '' }}", "")


def _tiny_llama_text(vocab_size: int, pad_id: int, **extra: object) -> dict[str, object]:
    """A 2-layer 64-wide Llama text config (the language model of every tiny VLM below)."""
    return dict(model_type="llama", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, vocab_size=vocab_size, max_position_embeddings=4096,
                rms_norm_eps=1e-5, pad_token_id=pad_id, tie_word_embeddings=False, **extra)


TINY_VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)

QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                 "<|image_pad|>", "<|video_pad|>"]


# Qwen2-VL-2B-Instruct's shapes, from its published config.json: the language model is Qwen2-1.5B's (1536 wide,
# 28 layers, 12 heads, 2 KV heads, 8960 MLP, 151936 vocab, tied embeddings, rope theta 1e6, mrope_section
# [16, 24, 24] of its 128-wide heads); the vision tower is transformers' `Qwen2VLVisionConfig` default (the tower
# of every Qwen2-VL size: 32 blocks, 1280 wide, 16 heads, MLP ratio 4, 14-px patches, 2x2 merge), whose merger
# outputs the language model's width.
QWEN2_VL_2B_TEXT = dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                        num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768, rms_norm_eps=1e-6,
                        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                                         "mrope_section": [16, 24, 24]})
QWEN2_VL_2B_VISION = dict(depth=32, embed_dim=1280, hidden_size=1536, mlp_ratio=4, num_heads=16, patch_size=14,
                          spatial_merge_size=2, temporal_patch_size=2)


def build_tiny_qwen_vl(out_dir: str | Path, family: str = "qwen2_vl", seed: int = 0, size: str = "tiny",
                       dtype: torch.dtype = torch.float32) -> Path:
    """Build and save a random-init Qwen2-VL (`family="qwen2_vl"`) or Qwen2.5-VL (`"qwen2_5_vl"`) with its
    processor (image + video processors, Qwen's `<|vision_start|><|image_pad|><|vision_end|>` chat layout).

    `size="tiny"`: 2-layer 64-wide, 4 to 16 image tokens per picture (fast tests); `size="qwen2-vl-2b"` (Qwen2-VL
    only): the Qwen2-VL-2B shapes above with the image processor's default pixel range. `dtype`: of the weights.
    """
    import transformers as tf

    if family not in ("qwen2_vl", "qwen2_5_vl"):
        raise ValueError(f"unknown Qwen VL family {family!r}")
    if size not in ("tiny", "qwen2-vl-2b") or (size != "tiny" and family != "qwen2_vl"):
        raise ValueError(f"unknown {family} size {size!r}")
    tok = _byte_level_tokenizer(QWEN_SPECIALS, bos=None, eos=None)
    ids = {t: tok.token_to_id(t) for t in QWEN_SPECIALS}
    tokenizer = _fast_tokenizer(
        tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", model_max_length=32768,
        extra_special_tokens={"image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
                              "vision_bos_token": "<|vision_start|>", "vision_eos_token": "<|vision_end|>"},
    )
    special = dict(pad_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"])
    text = dict(vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
                tie_word_embeddings=False, **special)
    pixels = dict(min_pixels=56 * 56, max_pixels=112 * 112)  # 4 to 16 image tokens per picture
    if family == "qwen2_vl":
        vision = dict(depth=2, embed_dim=32, hidden_size=64, num_heads=2, patch_size=14, spatial_merge_size=2,
                      temporal_patch_size=2)
        config_cls, model_cls, processor_cls = tf.Qwen2VLConfig, tf.Qwen2VLForConditionalGeneration, tf.Qwen2VLProcessor
    else:
        vision = dict(depth=2, hidden_size=32, intermediate_size=64, out_hidden_size=64, num_heads=2, patch_size=14,
                      spatial_merge_size=2, temporal_patch_size=2, window_size=56, fullatt_block_indexes=[1])
        config_cls, model_cls = tf.Qwen2_5_VLConfig, tf.Qwen2_5_VLForConditionalGeneration
        processor_cls = tf.Qwen2_5_VLProcessor
    tied = {}
    if size == "qwen2-vl-2b":
        text, vision, pixels = {**QWEN2_VL_2B_TEXT, **special}, QWEN2_VL_2B_VISION, {}
        tied = dict(tie_word_embeddings=True)
    config = config_cls(
        text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"], eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
        **tied,
    )
    torch.manual_seed(seed)
    model = _random_init(model_cls, config, dtype)
    processor = processor_cls(
        image_processor=tf.Qwen2VLImageProcessor(**pixels), video_processor=tf.Qwen2VLVideoProcessor(**pixels),
        tokenizer=tokenizer,
        chat_template=chat_template("<|im_start|>user\n", "<|im_start|>assistant\n", "<|im_end|>\n",
                                    "<|vision_start|><|image_pad|><|vision_end|>"),
    )
    return _save(model, processor, out_dir)


def build_tiny_idefics2(out_dir: str | Path, seed: int = 0) -> Path:
    """Build and save a random-init Idefics2 (perceiver resampler, 4 latents per picture) with its processor."""
    import transformers as tf

    specials = ["<unk>", "<s>", "</s>", "<fake_token_around_image>", "<image>", "<end_of_utterance>"]
    tok = _byte_level_tokenizer(specials, bos="<s>", eos=None)
    tokenizer = _fast_tokenizer(tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<unk>",
                                model_max_length=4096,
                                extra_special_tokens={"image_token": "<image>",
                                                      "image_boundary_token": "<fake_token_around_image>"})
    tokenizer.padding_side = "left"
    pad_id = tok.token_to_id("<unk>")
    config = tf.Idefics2Config(
        vision_config=dict(**TINY_VISION, image_size=32, patch_size=8),
        perceiver_config=dict(hidden_size=64, resampler_n_latents=4, resampler_depth=1, resampler_n_heads=2,
                              resampler_head_dim=16, num_key_value_heads=1),
        text_config=_tiny_llama_text(tok.get_vocab_size(), pad_id),
        image_token_id=tok.token_to_id("<image>"), pad_token_id=pad_id, tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = tf.Idefics2ForConditionalGeneration(config).eval()
    image_processor = tf.Idefics2ImageProcessor(do_image_splitting=False,
                                                size={"shortest_edge": 32, "longest_edge": 32})
    processor = tf.Idefics2Processor(
        image_processor=image_processor, tokenizer=tokenizer, image_seq_len=4,
        chat_template=chat_template("User:", "Assistant:", "<end_of_utterance>\n", "<image>"),
    )
    return _save(model, processor, out_dir)


def build_tiny_llava(out_dir: str | Path, family: str = "llava", seed: int = 0) -> Path:
    """Build and save a random-init LLaVA-1.5 (`family="llava"`: CLIP tower, 16 image tokens) or LLaVA-OneVision
    (`"llava_onevision"`: SigLIP tower, anyres tiles) with its processor and chat template."""
    import transformers as tf

    if family not in ("llava", "llava_onevision"):
        raise ValueError(f"unknown LLaVA family {family!r}")
    specials = ["<unk>", "<s>", "</s>", "<image>", "<video>", "<|im_start|>", "<|im_end|>"]
    tok = _byte_level_tokenizer(specials, bos="<s>" if family == "llava" else None, eos=None)
    eos = "</s>" if family == "llava" else "<|im_end|>"
    tokenizer = _fast_tokenizer(tok, bos_token="<s>", eos_token=eos, unk_token="<unk>", pad_token="<unk>",
                                model_max_length=4096,
                                extra_special_tokens={"image_token": "<image>", "video_token": "<video>"})
    tokenizer.padding_side = "left"
    ids = {t: tok.token_to_id(t) for t in specials}
    text = _tiny_llama_text(tok.get_vocab_size(), ids["<unk>"], eos_token_id=ids[eos])
    torch.manual_seed(seed)
    if family == "llava":
        config = tf.LlavaConfig(
            vision_config=dict(model_type="clip_vision_model", **TINY_VISION, image_size=32, patch_size=8),
            text_config=text, image_token_index=ids["<image>"], vision_feature_layer=-2,
            vision_feature_select_strategy="default", projector_hidden_act="gelu", pad_token_id=ids["<unk>"],
        )
        model = tf.LlavaForConditionalGeneration(config).eval()
        image_processor = tf.CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
        processor = tf.LlavaProcessor(
            image_processor=image_processor, tokenizer=tokenizer, patch_size=8,
            vision_feature_select_strategy="default", num_additional_image_tokens=1,
            chat_template=chat_template("USER: ", "ASSISTANT:", " ", "<image>\n"),
        )
    else:
        config = tf.LlavaOnevisionConfig(
            vision_config=dict(model_type="siglip_vision_model", **TINY_VISION, image_size=32, patch_size=8),
            text_config=text, image_token_index=ids["<image>"], video_token_index=ids["<video>"],
            vision_feature_layer=-1, vision_feature_select_strategy="full", vision_aspect_ratio="anyres_max_1",
            image_grid_pinpoints=[[32, 32], [32, 64], [64, 32]], pad_token_id=ids["<unk>"],
        )
        model = tf.LlavaOnevisionForConditionalGeneration(config).eval()
        image_processor = tf.LlavaOnevisionImageProcessor(
            size={"height": 32, "width": 32}, image_grid_pinpoints=[[32, 32], [32, 64], [64, 32]])
        processor = tf.LlavaOnevisionProcessor(
            image_processor=image_processor, video_processor=tf.LlavaOnevisionVideoProcessor(
                size={"height": 32, "width": 32}),
            tokenizer=tokenizer, num_image_tokens=16, vision_feature_select_strategy="full",
            vision_aspect_ratio="anyres_max_1",
            chat_template=chat_template("<|im_start|>user ", "<|im_start|>assistant\n", "<|im_end|>\n", "<image>\n"),
        )
    return _save(model, processor, out_dir)
