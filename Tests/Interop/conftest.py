"""Fixtures for the interoperability tests: a real `parleyd` on loopback, with accounts.

Each test that asks for `parleyd` gets its own server (own temporary data directory, own
ports, own self-signed certificate), so tests cannot disturb each other. On teardown the
server is stopped with SIGTERM and must exit with status 0 within its shutdown grace period.
When a test fails, the server's log is attached to the failure report.

Markers adjust one test's server:
  @pytest.mark.parleyd_accounts("dave", "erin")   more accounts besides ACCOUNTS
  @pytest.mark.parleyd_config("sessions:\n  single_device: true\n")   YAML appended to the config
A test can restart its server on the same data directory with `parleyd.restart()`.
"""

from __future__ import annotations

import logging
import os
import random
import re
import secrets
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# INTEROP_PARLEYD lets a run point at another build (e.g. .build/release/parleyd); not a
# PARLEYD_* name, which parleyd itself would refuse as an unknown option.
PARLEYD = Path(os.environ.get("INTEROP_PARLEYD", REPO_ROOT / ".build" / "debug" / "parleyd"))
HOST = "127.0.0.1"
DOMAIN = "localhost"
LOG_LEVEL = os.environ.get("INTEROP_LOG_LEVEL", "debug")
GRACE_PERIOD = 5  # shutdown.grace_period given to the server, seconds
START_TIMEOUT = 20  # seconds from exec to a complete banner (a cold debug binary is slow)
ACCOUNTS = ("alice", "bob", "carol")


@dataclass(frozen=True)
class Account:
    username: str
    password: str

    @property
    def jid(self) -> str:
        return f"{self.username}@{DOMAIN}"


@dataclass
class Parleyd:
    """A running parleyd and what a client needs to reach it."""

    workdir: Path
    process: subprocess.Popen | None = None
    c2s_port: int = 0
    direct_tls_port: int = 0
    cert_path: Path | None = None
    fingerprint: str | None = None
    accounts: dict[str, Account] = field(default_factory=dict)
    host: str = HOST
    domain: str = DOMAIN
    exit_status: int | None = None
    stop_seconds: float | None = None
    extra_config: str = ""
    previous_logs: list[str] = field(default_factory=list)  # stderr of earlier runs (restart)

    @property
    def config_path(self) -> Path:
        return self.workdir / "parleyd.yaml"

    @property
    def stdout_path(self) -> Path:
        return self.workdir / "parleyd.stdout"

    @property
    def stderr_path(self) -> Path:
        return self.workdir / "parleyd.stderr"

    def account(self, name: str) -> Account:
        return self.accounts[name]

    def log(self) -> str:
        """stderr of this run, after those of the runs before a restart."""
        try:
            current = self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            current = ""
        return "".join(self.previous_logs) + current

    def log_tail(self, lines: int = 150) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def log_lines(self, needle: str) -> list[str]:
        return [line for line in self.log().splitlines() if needle in line]

    def stop(self) -> None:
        """SIGTERM, then waits for the grace period plus a margin. The outcome is kept in
        `exit_status` (None: it had to be killed) and `stop_seconds`; the fixture checks it."""
        process = self.process
        if process is None or self.stop_seconds is not None:
            return
        started = time.monotonic()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=GRACE_PERIOD + 5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                self.stop_seconds = time.monotonic() - started
                return
        self.exit_status = process.returncode
        self.stop_seconds = time.monotonic() - started

    def restart(self) -> None:
        """Stops the server with SIGTERM (it must exit with status 0) and starts it again on
        the same configuration and data directory; the ports may change (see the banner)."""
        self.stop()
        if self.exit_status != 0:
            raise AssertionError(
                f"parleyd did not stop cleanly before the restart (status {self.exit_status}, "
                f"{self.stop_seconds:.1f}s)\n--- parleyd stderr ---\n{self.log_tail()}")
        # _start truncates the log files: keep this run's stderr for log() and failure reports.
        run_log = self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""
        self.previous_logs.append(run_log + f"----- parleyd restarted (run {len(self.previous_logs) + 2}) -----\n")
        self.process = None
        self.exit_status = None
        self.stop_seconds = None
        failure = None
        for _attempt in range(3):
            _write_config(self, _free_port())
            failure, retryable = _start(self)
            if failure is None or not retryable:
                break
        if failure is not None:
            raise AssertionError(f"parleyd did not start again: {failure}\n--- parleyd stderr ---\n{self.log_tail()}")


def _clean_environment() -> dict[str, str]:
    """The test process's environment without PARLEYD_* (any of them would override the
    test configuration, and an unknown one stops parleyd)."""
    return {k: v for k, v in os.environ.items() if not k.upper().startswith("PARLEYD_")}


def _free_port() -> int:
    """A free port drawn from below the kernel's ephemeral range: a port from bind(0) is one
    any outgoing connection may take as its source port before parleyd binds it."""
    try:
        ephemeral_start = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_start = 32768
    for _ in range(200):
        port = random.randrange(10000, max(10001, ephemeral_start))
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((HOST, port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range after 200 tries")


def _write_config(server: Parleyd, direct_tls_port: int) -> None:
    # c2s.port 0 lets parleyd pick the port (the banner says which); direct_tls_port 0 would
    # disable direct TLS, so that one is a port found free just before.
    server.config_path.write_text(
        f"""\
domain: {DOMAIN}
data_dir: {server.workdir / 'data'}
log_level: {LOG_LEVEL}
c2s:
  interfaces: [{HOST}]
  port: 0
  direct_tls_port: {direct_tls_port}
tls:
  required: true
registration:
  enabled: false
limits:
  # The wrong-password test must not make later logins from 127.0.0.1 slow.
  auth_failures_per_ip: 1000
  unauthenticated_timeout: 15
shutdown:
  grace_period: {GRACE_PERIOD}
{"" if "metrics:" in server.extra_config else "metrics:" + chr(10) + "  enabled: false" + chr(10)}{server.extra_config}"""
    )


def _adduser(server: Parleyd, username: str, password: str) -> None:
    env = _clean_environment()
    env["PARLEYD_PASSWORD"] = password
    result = subprocess.run(
        [str(PARLEYD), "adduser", "--config", str(server.config_path), username],
        env=env, cwd=server.workdir, capture_output=True, text=True, timeout=30,
    )
    if result.returncode != 0:
        pytest.fail(
            f"parleyd adduser {username} failed with status {result.returncode}:\n"
            f"stdout: {result.stdout}\nstderr: {result.stderr}", pytrace=False)


_BANNER_END = "add a user:"
_STARTTLS_RE = re.compile(r"client connections \(STARTTLS\): (\S+):(\d+)")
_DIRECT_TLS_RE = re.compile(r"client connections \(direct TLS\): (\S+):(\d+)")
_CERT_RE = re.compile(r"^\s*certificate: (.+?)\s*$", re.MULTILINE)
_FINGERPRINT_RE = re.compile(r"certificate SHA-256 fingerprint: (\S+)")


def _start(server: Parleyd) -> tuple[str | None, bool]:
    """Starts parleyd and parses its banner. Returns (None, _) when it runs, else (why it
    failed, whether another attempt could help: parleyd exited by itself, e.g. because the
    direct TLS port was taken meanwhile)."""
    out = server.stdout_path.open("wb")
    err = server.stderr_path.open("wb")
    server.process = subprocess.Popen(
        [str(PARLEYD), "run", "--config", str(server.config_path)],
        stdin=subprocess.DEVNULL, stdout=out, stderr=err,
        env=_clean_environment(), cwd=server.workdir,
    )
    out.close()
    err.close()
    deadline = time.monotonic() + START_TIMEOUT
    banner = ""
    while time.monotonic() < deadline:
        banner = server.stdout_path.read_text(errors="replace")
        if _BANNER_END in banner:
            break
        if server.process.poll() is not None:
            return f"parleyd exited with status {server.process.returncode} before printing its banner", True
        time.sleep(0.05)
    else:
        server.process.kill()
        server.process.wait()
        return f"no complete banner within {START_TIMEOUT}s; stdout so far:\n{banner}", False

    starttls = _STARTTLS_RE.search(banner)
    direct = _DIRECT_TLS_RE.search(banner)
    cert = _CERT_RE.search(banner)
    if not (starttls and direct and cert):
        return f"unexpected banner:\n{banner}", False
    if starttls.group(1) != HOST or direct.group(1) != HOST:
        return f"parleyd listens elsewhere than {HOST}:\n{banner}", False
    server.c2s_port = int(starttls.group(2))
    server.direct_tls_port = int(direct.group(2))
    server.cert_path = Path(cert.group(1))
    if not server.cert_path.is_absolute():
        server.cert_path = server.workdir / server.cert_path
    fingerprint = _FINGERPRINT_RE.search(banner)
    server.fingerprint = fingerprint.group(1) if fingerprint else None
    if not server.cert_path.is_file():
        return f"the certificate named in the banner does not exist: {server.cert_path}", False
    return None, False


def pytest_configure(config):
    config.addinivalue_line("markers", "parleyd_accounts(*names): accounts created besides ACCOUNTS")
    config.addinivalue_line("markers", "parleyd_config(yaml): text appended to the test server's configuration")


@pytest.fixture
def parleyd(tmp_path: Path, request):
    """A fresh parleyd on 127.0.0.1 with the accounts in ACCOUNTS (random passwords), plus
    those of a parleyd_accounts marker, configured as a parleyd_config marker adds."""
    if not PARLEYD.is_file() or not os.access(PARLEYD, os.X_OK):
        pytest.fail(
            f"parleyd is not built: {PARLEYD} is missing. "
            "Run `swift build --product parleyd` at the repository root first "
            "(or set INTEROP_PARLEYD to a parleyd binary).", pytrace=False)
    server = Parleyd(workdir=tmp_path)
    names = list(ACCOUNTS)
    for marker in request.node.iter_markers("parleyd_accounts"):
        names += [name for name in marker.args if name not in names]
    for marker in request.node.iter_markers("parleyd_config"):
        server.extra_config += marker.args[0].rstrip("\n") + "\n"

    failure = None
    for _attempt in range(3):  # the direct TLS port can be taken between probe and bind
        _write_config(server, _free_port())
        if not server.accounts:
            for name in names:
                account = Account(name, "pw-" + secrets.token_urlsafe(12))
                _adduser(server, account.username, account.password)
                server.accounts[name] = account
        failure, retryable = _start(server)
        if failure is None or not retryable:
            break
    if failure is not None:
        pytest.fail(f"parleyd did not start: {failure}\n--- parleyd stderr ---\n{server.log_tail()}", pytrace=False)

    yield server

    server.stop()
    status, seconds = server.exit_status, server.stop_seconds
    if status is None:
        pytest.fail(
            f"parleyd did not exit within {GRACE_PERIOD + 5}s of SIGTERM (grace period {GRACE_PERIOD}s)\n"
            f"--- parleyd stderr ---\n{server.log_tail()}", pytrace=False)
    if status != 0:
        pytest.fail(
            f"parleyd exited with status {status}, expected 0 (stopped with SIGTERM at teardown or earlier, {seconds:.1f}s)\n"
            f"--- parleyd stderr ---\n{server.log_tail()}", pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Attaches the server log to a failing test's report."""
    outcome = yield
    report = outcome.get_result()
    server = item.funcargs.get("parleyd") if hasattr(item, "funcargs") else None
    if report.failed and isinstance(server, Parleyd):
        report.sections.append(("parleyd stderr (last 150 lines)", server.log_tail()))


@pytest.fixture(autouse=True)
def _slixmpp_debug_log(caplog):
    """Keeps slixmpp's XML trace (SEND:/RECV:) so that a failing test shows the exchange."""
    caplog.set_level(logging.DEBUG, logger="slixmpp")
    yield

