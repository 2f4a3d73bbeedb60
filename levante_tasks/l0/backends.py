"""How lmms-eval's model classes take an L0 request's stop string (`until`) and budget (`max_new_tokens`).

Read in lmms-eval's source (0.7.2 and 0.7.3, unpatched), keyed by `--model` id. A task does not learn which class
runs it (lmms-eval builds `class:` tasks without the model's name), so every task records this table in
`results.json` (`metadata.l0.backends`) beside the run's `config.model`: a score then says whether its responses
could run past `<|end|>` (the scorer cuts there: only time and tokens are lost) or past the document's budget (a
trace the budget would have cut short can then pass: not comparable with L0-Bench's numbers).
"""

from __future__ import annotations

_OPENAI = {"stop": "not sent: lmms-eval's openai class builds its requests without one (use --model levante_openai)",
           "max_new_tokens": "sent (as max_tokens)"}
NOTES: dict[str, dict[str, str]] = {
    "levante_openai": {"stop": "sent (as stop)", "max_new_tokens": "sent (as max_tokens)"},
    "openai": _OPENAI,
    "vllm": {"stop": "not sent: lmms-eval's vllm class drops `until`",
             "max_new_tokens": "raised to the model's own max_new_tokens when lower (model_args; default 4096, 1024 "
                               "with --force_simple): pass max_new_tokens=1 in model_args to send each document's own"},
    "huggingface": {"stop": "not used: lmms-eval's huggingface class ignores `until`", "max_new_tokens": "sent"},
}
