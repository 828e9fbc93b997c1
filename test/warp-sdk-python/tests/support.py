"""A live Dispatch server for the Warp Platform SDK tests: this repository's ``node src/main.ts serve`` on a free
127.0.0.1 port, with a fresh data directory, a generated admin key and, when given, a
dispatch.config.yaml. When it cannot be started (no Node >= 22.13), the tests fail under ``CI`` and are
skipped elsewhere. (The same approach as clients/python/tests/support.py; this project has its own venv.)
"""

from __future__ import annotations

import json
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


def wait_until(condition: Callable[[], T | None], *, timeout: float = 30.0, what: str = "condition") -> T:
    """Polls ``condition`` until it returns something truthy, failing after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


async def async_wait_until(condition: Callable[[], Any], *, timeout: float = 30.0, what: str = "condition") -> Any:
    """``wait_until`` for a coroutine function ``condition`` (polls without blocking the event loop)."""
    import anyio

    deadline = time.monotonic() + timeout
    while True:
        value = await condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        await anyio.sleep(0.05)


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


def _server_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISPATCH_") and k != "DATABASE_URL"}
    if "DISPATCH_NODE_CACHE" in os.environ:
        env["DISPATCH_NODE_CACHE"] = os.environ["DISPATCH_NODE_CACHE"]
    env.update(extra)
    return env


def start_server(config: dict[str, Any] | None = None, **extra_env: str) -> DispatchServer:
    """Starts a server; ``config`` becomes its dispatch.config.yaml (JSON is YAML), extra_env its environment."""
    if not (REPO_ROOT / "src" / "main.ts").exists():
        _unavailable(f"no Dispatch sources at {REPO_ROOT}")
    if shutil.which("bash") is None:
        _unavailable("bash not found")
    last_error = ""
    for _ in range(3):  # a free port can be taken between probing and binding: try another
        data_dir = tempfile.mkdtemp(prefix="dispatch-warp-sdk-")
        port = free_port()
        key = random_key()
        settings: dict[str, str] = {}
        if config is not None:
            config_file = Path(data_dir) / "dispatch.config.yaml"
            config_file.write_text(json.dumps(config))
            settings["DISPATCH_CONFIG_FILE"] = str(config_file)
        env = _server_env(
            {
                "DISPATCH_HOST": "127.0.0.1",
                "DISPATCH_PORT": str(port),
                "DISPATCH_DATA_DIR": data_dir,
                "DISPATCH_ADMIN_API_KEY": key,
                "DISPATCH_LOG_LEVEL": "warn",
                "DISPATCH_SHUTDOWN_GRACE_MS": "0",
                "DISPATCH_POLL_INTERVAL_MS": "200",
                **settings,
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


def git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def seed_bare_repository(root: Path, repo: str, files: dict[str, str]) -> Path:
    """A bare repository ``root/<repo>.git`` whose main branch holds ``files``."""
    bare = root / f"{repo}.git"
    git("init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    seed = Path(tempfile.mkdtemp(prefix="dispatch-seed-"))
    try:
        git("init", "--quiet", "--initial-branch=main", str(seed))
        for name, text in files.items():
            (seed / name).parent.mkdir(parents=True, exist_ok=True)
            (seed / name).write_text(text)
        git("add", "--all", cwd=seed)
        git("-c", "user.name=Seed", "-c", "user.email=seed@example.com", "commit", "--quiet", "-m", "seed", cwd=seed)
        git("push", "--quiet", str(bare), "HEAD:refs/heads/main", cwd=seed)
    finally:
        shutil.rmtree(seed, ignore_errors=True)
    return bare


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(6)}"
