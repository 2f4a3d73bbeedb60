"""The decoding settings of every LEVANTE generate_until task, shared by both harnesses (one source of truth).

lmms-eval reads them as the template's `generation_kwargs` (lmms/generate.py writes them there);
the inspect tasks give inspect_ai the same as a GenerateConfig (inspect/task.py): greedy decoding
(do_sample false = temperature 0), at most 128 new tokens, generation stops at the first blank line.
"""

from __future__ import annotations

MAX_NEW_TOKENS = 128
DO_SAMPLE = False
STOP_SEQUENCES = ("\n\n",)
