"""Per-document generation budgets, by L0-Bench's rule, from each document's own target and prompt.

L0-Bench asks for `tokens("\\n".join(t[1:-1])) + 200` new tokens, where t is the target as it formats it (each
line followed by a newline): the string's characters joined by newlines, about twice the target's characters.
Thinking models get 20 times that, capped at `max_seq_len - 2 x tokens(prompt)`; a negative cap means
`max_seq_len`. L0-Bench counts with the model's tokenizer; without one (`count_tokens=len`) characters are
counted, an upper bound for any tokenizer whose tokens cover at least one character each (the traces are
ASCII), so the model can always write the whole target.

L0-Bench's client for OpenAI-compatible servers (OpenAI's models and every self-hosted model of its table; not
its Anthropic client) then sends at most 16,384 new tokens per request, whatever the prompt's length: the cap
bounds `max_tokens` only. Profile upstream applies that cap (`request_cap`); the default profile has none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

THINKING_FACTOR = 20
EXTRA_TOKENS = 200
MAX_SEQ_LEN = 32768  # L0-Bench's run_eval.yaml max_seq_len
UPSTREAM_REQUEST_CAP = 16384  # L0-Bench's client: new tokens per request, at most


def token_budget(target_lines: Sequence[str], prompt: str, count_tokens: Callable[[str], int] = len,
                 thinking: bool = False, max_seq_len: int = MAX_SEQ_LEN) -> int:
    """max_new_tokens for one document, before any request cap (module docstring)."""
    formatted = "".join(f"{line}\n" for line in target_lines)
    budget = count_tokens("\n".join(formatted[1:-1])) + EXTRA_TOKENS
    if thinking:
        budget = min(budget * THINKING_FACTOR, max_seq_len - count_tokens(prompt) * 2)
        if budget < 0:
            budget = max_seq_len
    return budget


def request_cap(profile: str) -> int | None:
    """The most new tokens one request may ask for: L0-Bench's client cap under profile upstream, else none."""
    return UPSTREAM_REQUEST_CAP if profile == "upstream" else None
