"""Shared fixtures: a project tree and a store outside it, per test."""

import os
import sys

import pytest

# the package from this source tree (the installed one, if any, would
# shadow changes being tested)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import decree  # noqa: E402


def write(path, data, mode=None):
    os.makedirs(os.path.dirname(str(path)) or ".", exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    if mode is not None:
        os.chmod(path, mode)


def read(path):
    with open(path, "rb") as f:
        return f.read()


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    write(root / "main.py", "print('hello')\n")
    write(root / "README.md", "# Project\n")
    write(root / "src" / "util.py", "def f():\n    return 1\n")
    return root


@pytest.fixture
def store(project, tmp_path):
    with decree.Store(project, tmp_path / "store") as s:
        yield s
