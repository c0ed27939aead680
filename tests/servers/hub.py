"""A loopback server speaking the part of the Hugging Face Hub HTTP API that downloads use.

It serves one folder as a dataset repo at a fixed commit: ``repo_info`` (``/api/datasets/{id}/revision/{rev}``),
the recursive tree listing (``/api/datasets/{id}/tree/{rev}``) and file resolution
(``/datasets/{id}/resolve/{rev}/{path}``, HEAD and GET, with the ``X-Repo-Commit`` and ``ETag``
headers huggingface_hub relies on). The real ``snapshot_download`` runs against it unchanged, and
every file request is logged, so a test can see exactly which files crossed the wire.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class HubServer:
    """``with HubServer(folder, "org/name") as hub:`` then point ``endpoint`` at ``hub.url``."""

    def __init__(self, folder: Path, repo_id: str):
        self.folder, self.repo_id = folder, repo_id
        self.downloads: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def files(self) -> list[str]:
        return sorted(p.relative_to(self.folder).as_posix() for p in self.folder.rglob("*") if p.is_file())

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        hub = self
        api, resolve = f"/api/datasets/{hub.repo_id}/", f"/datasets/{hub.repo_id}/resolve/"

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                path = unquote(urlsplit(self.path).path)
                if path.startswith(api + "revision/"):
                    self._json(
                        {
                            "id": hub.repo_id,
                            "sha": COMMIT,
                            "private": False,
                            "siblings": [{"rfilename": name} for name in hub.files()],
                        }
                    )
                elif path.startswith(api + "tree/"):
                    self._json([self._entry(name) for name in hub.files()])
                elif path.startswith(resolve):
                    self._file(path[len(resolve) :].split("/", 1)[1], body=True)
                else:
                    self._not_found("RepoNotFound")

            def do_HEAD(self) -> None:
                path = unquote(urlsplit(self.path).path)
                if path.startswith(resolve):
                    self._file(path[len(resolve) :].split("/", 1)[1], body=False)
                else:
                    self._not_found("RepoNotFound")

            def _entry(self, name: str) -> dict:
                data = (hub.folder / name).read_bytes()
                oid = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
                return {"type": "file", "oid": oid, "size": len(data), "path": name}

            def _not_found(self, code: str) -> None:
                """A 404 with the ``X-Error-Code`` by which huggingface_hub tells a missing repo from a missing file."""
                self.send_response(404)
                self.send_header("X-Error-Code", code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _json(self, value: object) -> None:
                body = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _file(self, name: str, body: bool) -> None:
                target = hub.folder / name
                if not target.is_file():
                    self._not_found("EntryNotFound")
                    return
                data = target.read_bytes()
                self.send_response(200)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", f'"{self._entry(name)["oid"]}"')
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    hub.downloads.append(name)
                    self.wfile.write(data)

        return Handler
