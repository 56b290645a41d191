"""lantern sync over ssh: a real OpenSSH server on loopback and a real ssh agent.

The server runs as the current user with its own configuration, host key and authorized key,
all in a temp folder; the key reaches ssh only through the agent, as on a user's machine.
``.ci/run`` installs OpenSSH's server where it is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from support.cli import lantern
from support.stores import git, init_repo

from lantern_git.store import Store

# Each sshd takes a port another process may take between _free_port and sshd's bind: under
# pytest-xdist these tests run on one worker, one sshd at a time.
pytestmark = pytest.mark.xdist_group("sshd")

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True,
        capture_output=True,
    )


def _wait_for_port(port: int, server: subprocess.Popen, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"sshd exited: {server.stderr.read().decode()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("sshd did not start listening")


@pytest.fixture
def ssh_server(tmp_path, monkeypatch):
    """An sshd on a free loopback port, an agent holding the user's key, and ssh set up to trust
    the server's host key; yields the URL prefix ``ssh://user@127.0.0.1:port``."""
    ssh_dir = tmp_path / "ssh"
    ssh_dir.mkdir()
    host_key, user_key = ssh_dir / "host_key", ssh_dir / "user_key"
    _keygen(host_key)
    _keygen(user_key)
    authorized = ssh_dir / "authorized_keys"
    authorized.write_text((ssh_dir / "user_key.pub").read_text())
    authorized.chmod(0o600)
    port = _free_port()
    config = ssh_dir / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
        f"AuthorizedKeysFile {authorized}\nPidFile {ssh_dir / 'sshd.pid'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
        "PermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\n"
    )
    if os.geteuid() == 0:
        # Debian's sshd wants its privilege-separation folder even when started by hand.
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    server = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    agent_socket = ssh_dir / "agent.sock"
    agent = subprocess.Popen(
        ["ssh-agent", "-D", "-a", str(agent_socket)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, server)
        deadline = time.monotonic() + 10
        while not agent_socket.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(agent_socket))
        subprocess.run(["ssh-add", "-q", str(user_key)], check=True, capture_output=True)
        known_hosts = ssh_dir / "known_hosts"
        host_pub = (ssh_dir / "host_key.pub").read_text().split()
        known_hosts.write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
        # The user's ssh configuration, as ~/.ssh/config would give it: trust this host key,
        # and take keys from the agent only.
        monkeypatch.setenv(
            "GIT_SSH_COMMAND",
            f"ssh -o UserKnownHostsFile={known_hosts} -o StrictHostKeyChecking=yes "
            "-o IdentityFile=none",
        )
        user = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
        yield f"ssh://{user}@127.0.0.1:{port}"
    finally:
        agent.terminate()
        server.terminate()
        agent.wait(timeout=10)
        server.wait(timeout=10)


def _store(path: Path) -> Path:
    init_repo(path)
    Store.init(str(path))
    return path


def test_two_hosts_sync_through_an_ssh_remote_with_the_agents_key(tmp_path, ssh_server):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    url = f"{ssh_server}{remote}"
    laptop, server = _store(tmp_path / "laptop"), _store(tmp_path / "server")
    for host in (laptop, server):
        git(host, "remote", "add", "origin", url)

    added = lantern(
        "memory", "add", "Ana prefers short answers.", "--kind", "preference",
        "--json", "--store", str(laptop),
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    record_id = json.loads(added.stdout)["id"]
    pushed = lantern("sync", "--json", "--store", str(laptop), timeout=120)
    assert pushed.returncode == 0, pushed.stderr
    assert json.loads(pushed.stdout)["pushed"] is True

    pulled = lantern("sync", "--json", "--store", str(server), timeout=120)
    assert pulled.returncode == 0, pulled.stderr
    shown = lantern("memory", "show", record_id, "--json", "--store", str(server))
    assert json.loads(shown.stdout)["content"] == "Ana prefers short answers."
    assert (
        git(remote, "log", "-1", "--format=%H").strip() == git(server, "rev-parse", "HEAD").strip()
    )


def test_an_agent_without_the_key_fails_at_once_with_a_hint(tmp_path, ssh_server, monkeypatch):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    store = _store(tmp_path / "store")
    git(store, "remote", "add", "origin", f"{ssh_server}{remote}")
    subprocess.run(["ssh-add", "-D"], check=True, capture_output=True)

    # Batch mode: no password prompt waits on a terminal that is not there (a prompt would
    # run into the subprocess timeout and fail the test).
    result = lantern("sync", "--store", str(store), timeout=60)
    assert result.returncode == 1
    assert "Permission denied" in result.stderr
    assert "ssh-add" in result.stderr
