"""Helpers shared by the tests: a real Dispatch server (Node) and small test doubles.

The server is this repository's ``node src/main.ts serve`` on a free 127.0.0.1 port with a fresh data
directory and a generated admin key. When it cannot be started (no Node >= 22.13 available), the live
tests fail under ``CI`` and are skipped elsewhere.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import string
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
NODE_ENV = "source scripts/node-env.sh"
STARTUP_DEADLINE_S = 120.0  # node-env.sh may first install Node 24 from the npm registry

T = TypeVar("T")


def random_key() -> str:
    alphabet = string.ascii_letters + string.digits
    return "dsp_" + "".join(secrets.choice(alphabet) for _ in range(40))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until(condition: Callable[[], T | None], *, timeout: float = 20.0, what: str = "condition") -> T:
    """Polls ``condition`` until it returns something truthy, failing after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def _server_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISPATCH_") and k != "DATABASE_URL"}
    if "DISPATCH_NODE_CACHE" in os.environ:
        env["DISPATCH_NODE_CACHE"] = os.environ["DISPATCH_NODE_CACHE"]
    env.update(extra)
    return env


@dataclass
class DispatchServer:
    root_url: str
    admin_key: str
    data_dir: str
    process: subprocess.Popen[bytes]
    log_path: str
    env: dict[str, str] = field(default_factory=lambda: {})

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/api/v1"

    def create_key(self, *, role: str = "member", team: str = "team_default", args: tuple[str, ...] = ()) -> str:
        """A new API key made with ``dispatch keys create`` on the server's own store (``args``: more options)."""
        result = subprocess.run(
            [
                "bash",
                "-c",
                f'{NODE_ENV} && exec node src/main.ts keys create --role "$1" --team "$2" "${{@:3}}"',
                "keys",
                role,
                team,
                *args,
            ],
            cwd=REPO_ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    def log_tail(self) -> str:
        try:
            return Path(self.log_path).read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            # Its own process group (start_new_session): also stops agent processes it spawned.
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)
        shutil.rmtree(self.data_dir, ignore_errors=True)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"live Dispatch server unavailable under CI: {reason}")
    pytest.skip(f"live Dispatch server unavailable: {reason}")


def start_server(**extra_env: str) -> DispatchServer:
    if not (REPO_ROOT / "src" / "main.ts").exists():
        _unavailable(f"no Dispatch sources at {REPO_ROOT}")
    if shutil.which("bash") is None:
        _unavailable("bash not found")
    last_error = ""
    for _ in range(3):  # a free port can be taken between probing and binding: try another
        data_dir = tempfile.mkdtemp(prefix="dispatch-pytest-")
        port = free_port()
        key = random_key()
        env = _server_env(
            {
                "DISPATCH_HOST": "127.0.0.1",
                "DISPATCH_PORT": str(port),
                "DISPATCH_DATA_DIR": data_dir,
                "DISPATCH_ADMIN_API_KEY": key,
                "DISPATCH_LOG_LEVEL": "warn",
                "DISPATCH_SHUTDOWN_GRACE_MS": "0",
                "DISPATCH_POLL_INTERVAL_MS": "200",
                **extra_env,
            }
        )
        log_path = os.path.join(data_dir, "server.log")
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                ["bash", "-c", f"{NODE_ENV} && exec node src/main.ts serve"],
                cwd=REPO_ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        server = DispatchServer(f"http://127.0.0.1:{port}", key, data_dir, process, log_path, env)
        deadline = time.monotonic() + STARTUP_DEADLINE_S
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if httpx.get(f"{server.root_url}/readyz", timeout=2).status_code == 200:
                    return server
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        last_error = server.log_tail()
        server.stop()
        if "EADDRINUSE" not in last_error:
            break
    _unavailable(f"the server did not become ready:\n{last_error}")
    raise AssertionError("unreachable")


def require_route(server: DispatchServer, path: str) -> None:
    """Skips the test while the server has no route at ``path`` (its 404 "no route ..." for unknown
    routes), so that tests of a route still being built run as soon as the server has it. Any other
    answer, a 404 for an unknown resource included, lets the test run."""
    response = httpx.get(
        f"{server.base_url}/{path}", headers={"Authorization": f"Bearer {server.admin_key}"}, timeout=30
    )
    if response.status_code == 404 and "no route" in response.text:
        pytest.skip(f"the server has no route GET /api/v1/{path} yet")


class SleepRecorder:
    """Stands in for a client's ``_sleep``: records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


class AsyncSleepRecorder:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(6)}"


def record_sleeps(client: object) -> SleepRecorder:
    """Replaces the client's backoff sleep with a recorder (the delays are asserted, never waited)."""
    recorder = SleepRecorder()
    setattr(client, "_sleep", recorder)  # noqa: B010 (a private hook; setattr keeps the checker quiet)
    return recorder


def record_async_sleeps(client: object) -> AsyncSleepRecorder:
    recorder = AsyncSleepRecorder()
    setattr(client, "_sleep", recorder)  # noqa: B010 (a private hook; setattr keeps the checker quiet)
    return recorder


# A RunItem as the server sends it, for mocked responses.
RUN: dict[str, Any] = {
    "run_id": "r",
    "task_id": "r",
    "title": "t",
    "prompt": "p",
    "state": "QUEUED",
    "created_at": "2026-11-21T05:20:11.123Z",
    "updated_at": "2026-11-21T05:20:11.123Z",
    "started_at": None,
    "finished_at": None,
    "run_time": "PT0S",
    "session_id": "s",
    "session_link": "http://x/sessions/s",
    "source": "API",
    "creator": {"type": "user", "uid": "u", "display_name": "U"},
    "executor": {"type": "user", "uid": "u", "display_name": "U"},
    "agent_config": {},
    "artifacts": [],
    "request_usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
    "is_sandbox_running": False,
    "is_run_type_cancellable": True,
    "scope": {"type": "Team", "uid": "team"},
    "metadata": {},
    "conversation_id": "r",
    "root_run_id": "r",
    "execution_location": "REMOTE",
}
