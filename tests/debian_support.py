"""Installing a Debian package a test needs (a server or a browser), as root, when missing."""

from __future__ import annotations

import os
import subprocess

import pytest


def apt_install(package: str) -> None:
    """``apt-get install PACKAGE`` (updating the package lists once if needed); as a non-root
    user the test fails saying the command to run."""
    if os.geteuid() != 0:
        pytest.fail(f"{package} is missing and only root can install it: run "
                    f"`sudo apt-get install -y {package}`, then the tests again.")  # fmt: skip
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", package]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0:  # a fresh machine may not have the package lists yet
        subprocess.run(["apt-get", "update"], capture_output=True, env=env, timeout=900)
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0:
        pytest.fail(f"could not install {package} (apt-get install {package}):\n{r.stderr[-2000:]}")
