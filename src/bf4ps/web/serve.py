"""Serving the app with uvicorn: in this process's thread (tests, benchmarks) or as `web run`."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def serve_in_thread(app: Starlette, host: str = "127.0.0.1", port: int | None = None,
                    timeout: float = 30.0, **options: Any) -> Iterator[str]:
    """Run `app` under uvicorn in a background thread (its own event loop, so the app's
    lifespan opens its own pool); yields the base URL once it accepts requests. `options`
    override uvicorn.Config's."""
    settings: dict[str, Any] = {"log_level": "warning", "lifespan": "on", "access_log": False}
    config = uvicorn.Config(app, host=host, port=port or free_port(host), **settings | options)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="bf4ps-web", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the web server did not start")
        time.sleep(0.05)
    try:
        yield f"http://{host}:{config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
