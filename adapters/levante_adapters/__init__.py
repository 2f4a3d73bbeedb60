"""LEVANTE model adapters for lmms-eval: `levante_clip` (contrastive scorer), `levante_vlm_mc` (one-pass letter
scorer for generative VLMs) and `levante_openai` (lmms-eval's `openai` class that also sends stop strings). Kept
import-light: lmms-eval imports `levante_adapters.manifest` on start."""
