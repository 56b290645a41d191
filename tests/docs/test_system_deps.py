"""``.ci/system-deps`` says what it installs and why before it installs anything, and the
README says the same: a machine with none of the tools is told every package and its reason."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "system-deps"
PACKAGES = ["git", "openssh-client", "strace", "chromium", "chromium-driver", "faketime"]


def bare_path(tmp_path: Path) -> str:
    """A PATH with the shell and the few commands the script itself needs, and none of the
    tools it checks for."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "id", "cat", "printf"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def test_a_dry_run_names_each_missing_package_with_its_reason_and_installs_nothing(tmp_path):
    env = dict(os.environ, PATH=bare_path(tmp_path))
    run = subprocess.run(
        [str(tmp_path / "bin" / "bash"), str(SCRIPT), "--dry-run"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    # sshd is looked for in /usr/sbin too, which no PATH hides.
    expected = PACKAGES[:2] + ([] if os.access("/usr/sbin/sshd", os.X_OK) else ["openssh-server"])
    expected += PACKAGES[2:]
    first, *reasons = run.stderr.splitlines()
    assert first == f"system-deps: would install with apt-get: {' '.join(expected)}"
    assert [line.split(":")[0].strip() for line in reasons] == expected
    assert all(len(line.split(": ", 1)[1]) > 20 for line in reasons)


def test_the_script_says_what_it_installs_before_it_installs_it():
    text = SCRIPT.read_text()
    said = text.index('echo "system-deps: installing with apt-get')
    assert said < text.index("apt-get install -y")


def test_the_readme_names_every_package_the_script_may_install():
    readme = (ROOT / "README.md").read_text()
    installs = set(re.findall(r'need ([a-z-]+) "', SCRIPT.read_text()))
    assert installs == {*PACKAGES, "openssh-server"}
    for package in installs:
        assert f"`{package}`" in readme, package
