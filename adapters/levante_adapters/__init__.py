"""LEVANTE model adapters for lmms-eval: `levante_clip` (contrastive scorer) and `levante_vlm_mc` (one-pass
letter scorer for generative VLMs). Kept import-light: lmms-eval imports `levante_adapters.manifest` on start."""
