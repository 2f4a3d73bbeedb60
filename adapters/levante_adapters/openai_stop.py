"""`--model levante_openai`: lmms-eval's `openai` chat model that also sends each request's stop strings.

lmms-eval's OpenAI-compatible classes (0.7.2 and 0.7.3) build a request from the messages, `max_new_tokens` (sent
as `max_tokens`) and `temperature` only: a task's `until` never reaches the server, so the model writes on to
its token budget. This class sends each request's `until` as the API's `stop` field, as L0-Bench's own client
does; model_args, retries and concurrency are lmms-eval's `openai` class unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from lmms_eval.models.chat.openai import OpenAICompatible


def stop_strings(gen_kwargs: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The non-empty stop strings of one request's generation kwargs (`until`: a string or a list)."""
    until = (gen_kwargs or {}).get("until") or ()
    return tuple(s for s in ([until] if isinstance(until, str) else until) if isinstance(s, str) and s)


class StopClient:
    """An OpenAI client whose chat completions carry fixed stop strings; everything else is the wrapped client."""

    def __init__(self, client: Any, stop: Sequence[str]) -> None:
        self._client = client
        self._stop = list(stop)
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **payload: Any) -> Any:
        return self._client.chat.completions.create(**payload, stop=self._stop)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class LevanteOpenAI(OpenAICompatible):
    """lmms-eval's `openai` chat model; requests that name stop strings (`until`) send them as `stop`."""

    def generate_until(self, requests: Sequence[Any]) -> list[Any]:
        """Answer the requests of each set of stop strings together, in the order given."""
        groups: dict[tuple[str, ...], list[int]] = {}
        for index, request in enumerate(requests):
            groups.setdefault(stop_strings(request.args[2]), []).append(index)
        results: list[Any] = [None] * len(requests)
        client = self.client
        try:
            for stop, indices in groups.items():
                self.client = StopClient(client, stop) if stop else client
                for index, result in zip(indices, super().generate_until([requests[i] for i in indices]), strict=True):
                    results[index] = result
        finally:
            self.client = client
        return results
