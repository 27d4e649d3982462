"""Serve the simulator with uvicorn: in the foreground (CLI), in a background thread (tests) or
in a child process (benchmarks, the demo: its own GIL).

One process, one event loop: the limiter and the counters are in-process state, so the simulator
is never run with several workers. Proxy headers are ignored: the source IP is the TCP peer, so a
client bound to 127.0.0.5 is seen as 127.0.0.5 (loopback aliases stand for egress IPs).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Self

import httpx
import orjson
import uvicorn

from bf4ps.sim.battlelog.app import create_app
from bf4ps.sim.battlelog.config import SimConfig


class SimServer(uvicorn.Server):
    """uvicorn.Server that first releases held (timeout-fault) requests when it shuts down."""

    def __init__(self, config: uvicorn.Config, stopping: asyncio.Event) -> None:
        super().__init__(config)
        self._stopping = stopping

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._stopping.set()
        await super().shutdown(sockets)


def build_server(config: SimConfig, *, access_log: bool = False) -> SimServer:
    app = create_app(config)
    server_config = uvicorn.Config(
        app,
        host=config.host,
        port=config.port,
        lifespan="on",
        ws="none",
        proxy_headers=False,
        server_header=False,
        access_log=access_log,
        log_level="info" if access_log else "warning",
        timeout_graceful_shutdown=2,
        backlog=4096,
    )
    return SimServer(server_config, app.state.sim.stopping)


def run(config: SimConfig, *, access_log: bool = False,
        sockets: list[socket.socket] | None = None) -> None:
    """Serve until interrupted (Ctrl-C / SIGTERM), on `sockets` when the caller bound them."""
    build_server(config, access_log=access_log).run(sockets=sockets)


class _Served:
    """What both ways of serving the simulator offer: its URL, and `with` stopping it."""

    __slots__ = ()
    base_url: str

    def url(self, path: str) -> str:
        return self.base_url + path

    def stop(self, timeout: float = 10.0) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


@dataclass(slots=True)
class RunningSimulator(_Served):
    """A simulator serving from a background thread; `stop()` (or `with`) ends it."""

    base_url: str
    config: SimConfig
    server: uvicorn.Server
    thread: threading.Thread
    sock: socket.socket

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout)
        self.sock.close()


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def start_in_thread(config: SimConfig, *, startup_timeout: float = 30.0) -> RunningSimulator:
    """Start serving on config.host:config.port (port 0: a free one) and return once ready."""
    sock = _bind(config.host, config.port)
    server = build_server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="battlelog-sim", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError("the Battlelog simulator did not start")
        time.sleep(0.01)
    host, port = sock.getsockname()[:2]
    return RunningSimulator(f"http://{host}:{port}", config, server, thread, sock)


@dataclass(slots=True)
class SimProcess(_Served):
    """A simulator serving from a child process; `stop()` (or `with`) ends it (SIGTERM)."""

    base_url: str
    process: subprocess.Popen[bytes]

    def stop(self, timeout: float = 10.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def spawn(config: SimConfig, *, startup_timeout: float = 30.0) -> SimProcess:
    """Start serving in a child process on a socket bound here (port 0: a free one)."""
    with _bind(config.host, config.port) as sock:
        host, port = sock.getsockname()[:2]
        knobs = orjson.dumps({**config.as_dict(), "port": port}).decode()
        command = [sys.executable, "-m", __name__, str(sock.fileno()), knobs]
        process = subprocess.Popen(command, pass_fds=(sock.fileno(),))
    running = SimProcess(f"http://{host}:{port}", process)
    deadline = time.monotonic() + startup_timeout
    while not _healthy(running.url("/__sim/health")):
        if process.poll() is not None or time.monotonic() > deadline:
            running.stop()
            raise RuntimeError("the Battlelog simulator process did not start")
        time.sleep(0.05)
    return running


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1.0).status_code == 200
    except httpx.TransportError:
        return False


def _child(fd: str, knobs: str) -> None:
    config = SimConfig(**orjson.loads(knobs))
    with contextlib.suppress(KeyboardInterrupt):  # a terminal's Ctrl-C: a normal stop, quietly
        build_server(config).run(sockets=[socket.socket(fileno=int(fd))])


if __name__ == "__main__":
    _child(*sys.argv[1:3])
