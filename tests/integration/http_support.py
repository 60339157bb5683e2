"""Helpers for the HTTP API tests: a real uvicorn server on 127.0.0.1, started and stopped by the test."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from indexfoundry import api
from indexfoundry.models.config import RateLimitConfig
from indexfoundry.phases.serve import default_profile
from indexfoundry.surfaces.http import HttpSettings, create_app
from tests.conftest import SAMPLE_DOCS, folder_config, write_tree
from tests.waiting import wait_for


class LiveServer:
    """A uvicorn server running the app in a thread, on a free port of 127.0.0.1."""

    def __init__(self, settings: HttpSettings) -> None:
        self.settings = settings
        self.app = create_app(settings)
        config = uvicorn.Config(
            self.app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", **settings.proxy_options()
        )
        self.server = uvicorn.Server(config)
        self.exit_code: int | str | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.server.run()
        except SystemExit as exc:  # uvicorn exits when the app's startup fails
            self.exit_code = exc.code

    def start(self, timeout: float = 30.0) -> LiveServer:
        self.thread.start()

        def started() -> bool:
            if self.server.started:
                return True
            if not self.thread.is_alive():
                raise RuntimeError("the server stopped during startup")
            return False

        if not wait_for(started, timeout=timeout, interval=0.02):
            raise RuntimeError("the server did not start in time")
        return self

    @property
    def port(self) -> int:
        port: int = self.server.servers[0].sockets[0].getsockname()[1]
        return port

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api(self) -> str:
        return self.root + self.settings.base_path

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.api, timeout=30, **kwargs)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@contextmanager
def live_server(runs_dir: Path, run_id: str = "latest", **overrides: Any) -> Iterator[LiveServer]:
    """Serve ``run_id`` of ``runs_dir`` for the duration of the block (rate limiting off unless given)."""
    overrides.setdefault("rate_limit", RateLimitConfig(enabled=False))
    overrides.setdefault("allowed_filters", default_profile().allowed_filters)
    settings = HttpSettings(runs_dir=runs_dir, run_id=run_id, port=0, endpoints=_all_endpoints(), **overrides)
    server = LiveServer(settings).start()
    try:
        yield server
    finally:
        server.stop()


def _all_endpoints() -> list[Any]:
    from indexfoundry.models.config import ALL_SERVE_ENDPOINTS

    return list(ALL_SERVE_ENDPOINTS)


def make_run(root: Path, docs: dict[str, str | bytes] | None = None, name: str = "docs", **sections: Any) -> str:
    """A completed run over a small markdown tree, indexed with the hash embedder; returns its id."""
    folder = write_tree(root / name, docs or SAMPLE_DOCS)
    runs_dir = root / "runs"
    out = api.pipeline_run(folder_config(folder, **sections), runs_dir=runs_dir)
    assert out.status == "completed", out
    return out.run_id
