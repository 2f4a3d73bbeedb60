"""A fake OpenAI-compatible chat server on 127.0.0.1 that logs what each request carried, as the processor spy does.

Every `POST .../chat/completions` appends `{"processor": "openai-server", "texts": [...], "colours": [...]}` (the
colour code of each `image_url` picture, in message order; see `fixture_data`), the request's `stop` and `max_tokens`
(None when absent) and its `time` to the log and answers `reply`: a fixed text, or a function of that logged
request line (`black_box_reply`: the scripted black box of `black_box`, answering picture-option items from the
presented order their pictures' colours give). It runs in a daemon thread and stops when the `serve` context ends.
"""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from PIL import Image

from levante_tasks.schema.items import LETTERS
from levante_tasks.testing import black_box
from levante_tasks.testing.fixture_data import decode_colour

Reply = str | Callable[[dict[str, Any]], str]  # a fixed answer, or one computed from the logged request line


def request_line(body: dict[str, Any]) -> dict[str, Any]:
    """The texts and picture colours of one chat-completions request body, in message order."""
    texts, colours = [], []
    for message in body.get("messages", []):
        content = message.get("content")
        for part in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
            if part.get("type") == "text":
                texts.append(part["text"])
            elif part.get("type") == "image_url":
                data = part["image_url"]["url"].split(",", 1)[1]
                colours.append(decode_colour(Image.open(io.BytesIO(base64.b64decode(data)))))
    return {"processor": "openai-server", "texts": [" ".join(texts)], "colours": colours,
            "stop": body.get("stop"), "max_tokens": body.get("max_tokens")}


def presented_options(line: dict[str, Any]) -> list[int]:
    """The canonical option indices a request's option pictures show, in presented order (context pictures left
    out): on the colour-coded fixture, the item's presented order when its options are pictures."""
    return [colour for colour in line["colours"] if colour is not None and colour >= 0]


def black_box_reply(item_key: Callable[[dict[str, Any]], str], *, favourite: int = 0, bias: float = 0.3,
                    salt: str = "", fallback: str = "A") -> Callable[[dict[str, Any]], str]:
    """A reply that answers as `black_box.scripted_item(item_key(line), ...)` does for the presented order the
    option pictures give (its letter); `fallback` for a request with fewer than two option pictures."""
    def reply(line: dict[str, Any]) -> str:
        order = presented_options(line)
        if len(order) < 2:
            return fallback
        item = black_box.scripted_item(item_key(line), len(order), favourite=favourite, bias=bias)
        return LETTERS[order.index(black_box.answer(item, order, salt))]
    return reply


@contextmanager
def serve(log: Path, reply: Reply = "A") -> Iterator[str]:
    """Run the server on a free port; yields its base URL (`http://127.0.0.1:PORT/v1`)."""
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            line = request_line(body)
            with lock, open(log, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({**line, "time": time.time()}) + "\n")
            answer = json.dumps({
                "id": "fake", "object": "chat.completion", "created": 0, "model": body.get("model", "fake"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": reply(line) if callable(reply) else reply}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            """Quiet: the log file is the record."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
