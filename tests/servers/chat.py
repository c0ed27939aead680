"""A loopback server that speaks OpenAI's chat-completions and Gemini's generateContent protocols.

The real openai and google-genai SDKs are pointed at it. What it answers is scripted: a
``Script`` maps a phrase found in the first user message to a list of replies served in turn (the
last one repeats), so tests are deterministic however the client's threads interleave. A reply is
either an answer (rendered in the protocol of the request), an HTTP error with optional
``Retry-After``, a malformed body, or a hung connection that never answers. Every request is
recorded, parsed into the same shape for both protocols, so a test can check exactly what crossed
the wire (images included).
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GEMINI_PATH = re.compile(r"^/(?:v1beta|v1)/models/(?P<model>[^:/]+):generateContent$")


@dataclass(frozen=True)
class Reply:
    """One scripted reply."""

    text: str | None = None  # an answer with this text
    status: int = 200
    retry_after: str | None = None
    raw_body: bytes | None = None  # sent as is (malformed JSON, truncated bodies)
    hang: bool = False  # accept the request and never answer
    prompt_tokens: int = 20
    completion_tokens: int = 10
    finish_reason: str = "stop"


def answer(text: str, **usage: int) -> Reply:
    return Reply(text=text, **usage)


def error(status: int, retry_after: str | None = None) -> Reply:
    return Reply(status=status, retry_after=retry_after)


HANG = Reply(hang=True)
MALFORMED = Reply(raw_body=b'{"id": "chatcmpl-1", "choices": [')


@dataclass
class ChatCall:
    """A request as received, in one shape for both protocols."""

    protocol: str  # "openai" or "gemini"
    path: str
    model: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]
    system: str
    user_text: str  # the last user message's text
    first_user_text: str  # the first user message's text: the item, whatever repairs followed
    images: list[tuple[str, bytes]] = field(default_factory=list)  # (mime type, bytes) of that message
    turns: int = 0  # number of non-system messages


class Script:
    """Replies chosen by a phrase in the first user message, served in order, the last repeating.

    Matching the first user message keeps one item's replies together across repair turns.
    """

    def __init__(self, rules: Mapping[str, Sequence[Reply]], default: Reply | None = None):
        self._rules = {phrase: list(replies) for phrase, replies in rules.items()}
        self._served: dict[str, int] = {}
        self._default = default or answer("OK")
        self._lock = threading.Lock()

    def __call__(self, call: ChatCall) -> Reply:
        for phrase, replies in self._rules.items():
            if phrase in call.first_user_text:
                with self._lock:
                    index = self._served.get(phrase, 0)
                    self._served[phrase] = index + 1
                return replies[min(index, len(replies) - 1)]
        return self._default


class ChatServer:
    """``with ChatServer(Script({...})) as server:`` then use ``server.openai_url`` or ``server.url``."""

    def __init__(self, responder: Callable[[ChatCall], Reply]):
        self.responder = responder
        self.calls: list[ChatCall] = []
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def openai_url(self) -> str:
        return f"{self.url}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()

    def answered(self) -> list[ChatCall]:
        with self._lock:
            return list(self.calls)

    def _record(self, call: ChatCall) -> None:
        with self._lock:
            self.calls.append(call)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, json.dumps({"object": "list", "data": []}).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("?", 1)[0]
                gemini = GEMINI_PATH.match(path)
                if path == "/v1/chat/completions":
                    call = _openai_call(path, dict(self.headers), body)
                elif gemini:
                    call = _gemini_call(path, gemini.group("model"), dict(self.headers), body)
                else:
                    self._send(404, b'{"error": {"message": "unknown endpoint"}}')
                    return
                server._record(call)
                reply = server.responder(call)
                if reply.hang:
                    server._closing.wait(timeout=60)
                    return
                if reply.raw_body is not None:
                    self._send(200, reply.raw_body)
                elif reply.status != 200:
                    headers = {"Retry-After": reply.retry_after} if reply.retry_after else {}
                    message = {"error": {"message": f"scripted HTTP {reply.status}", "code": reply.status}}
                    self._send(reply.status, json.dumps(message).encode(), headers)
                else:
                    render = _gemini_body if call.protocol == "gemini" else _openai_body
                    self._send(200, json.dumps(render(call, reply)).encode())

            def _send(self, status: int, payload: bytes, headers: Mapping[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

        return Handler


def _openai_call(path: str, headers: Mapping[str, str], body: Mapping[str, Any]) -> ChatCall:
    messages = body.get("messages", [])
    system = "\n".join(m["content"] for m in messages if m["role"] == "system" and isinstance(m["content"], str))
    users = [m for m in messages if m["role"] == "user"]
    text, images = "", []
    if users:
        content = users[-1]["content"]
        text = _openai_text(content)
        if not isinstance(content, str):
            for part in content:
                if part["type"] == "image_url":
                    header, data = part["image_url"]["url"].split(",", 1)
                    images.append((header[len("data:") : header.index(";")], base64.b64decode(data)))
    turns = sum(1 for m in messages if m["role"] != "system")
    first = _openai_text(users[0]["content"]) if users else ""
    return ChatCall("openai", path, body.get("model", ""), headers, body, system, text, first, images, turns)


def _openai_text(content: str | list[dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if part["type"] == "text")


def _gemini_call(path: str, model: str, headers: Mapping[str, str], body: Mapping[str, Any]) -> ChatCall:
    contents = body.get("contents", [])
    system_parts = (body.get("systemInstruction") or body.get("system_instruction") or {}).get("parts", [])
    system = "".join(part.get("text", "") for part in system_parts)
    users = [c for c in contents if c.get("role", "user") == "user"]
    text, images = "", []
    if users:
        for part in users[-1].get("parts", []):
            if "text" in part:
                text += part["text"]
            inline = part.get("inlineData") or part.get("inline_data")
            if inline:
                mime = inline.get("mimeType") or inline.get("mime_type")
                images.append((mime, base64.b64decode(inline["data"])))
    first = "".join(part.get("text", "") for part in users[0].get("parts", [])) if users else ""
    return ChatCall("gemini", path, model, headers, body, system, text, first, images, len(contents))


def _openai_body(call: ChatCall, reply: Reply) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{len(call.user_text)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": call.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.text},
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


def _gemini_body(call: ChatCall, reply: Reply) -> dict[str, Any]:
    finish = {"stop": "STOP", "length": "MAX_TOKENS"}.get(reply.finish_reason, reply.finish_reason.upper())
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": reply.text}]}, "finishReason": finish, "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": reply.prompt_tokens,
            "candidatesTokenCount": reply.completion_tokens,
            "totalTokenCount": reply.prompt_tokens + reply.completion_tokens,
        },
        "modelVersion": call.model,
    }
