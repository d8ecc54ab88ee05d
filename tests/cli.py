"""The one way tests run the ``dpmic`` command line: :func:`invoke`.

In the test's process (click's runner, the default) or as a ``python -m
dpmic_dask`` process that imports this checkout (``subprocess=True``); either way
the answer is an :class:`Outcome`: the exact exit code, standard output and
standard error. Tests compare ``exit_code`` with a member of
:class:`~dpmic_dask.batch.clibase.Exit` (or a number), never its truthiness.
"""

from __future__ import annotations

import os
import subprocess as _subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]


class Outcome(NamedTuple):
    """What one command did."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """Standard output, then standard error."""
        return self.stdout + self.stderr


def command(*args) -> list[str]:
    """The argument vector of a ``dpmic`` process that runs this checkout."""
    return [sys.executable, "-m", "dpmic_dask", *map(str, args)]


def process_env(env: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """This environment with this checkout first on ``PYTHONPATH``, changed by
    ``env`` (a ``None`` value removes the variable)."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    merged: dict[str, str] = {**os.environ, "PYTHONPATH": path}
    for key, value in (env or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def invoke(*args, subprocess: bool = False, env: Mapping[str, str | None] | None = None,
           input: str | None = None, cwd: str | Path | None = None, timeout: float = 300,
           raise_errors: bool = False) -> Outcome:
    """Run ``dpmic ARGS`` and return its exit code, standard output and error.

    ``args`` are the arguments (each turned into text), or one list of them.
    ``env`` changes the environment, ``input`` is standard input. In process,
    ``raise_errors`` lets an exception the command did not handle reach the
    test; ``cwd`` and ``timeout`` are for a process only.
    """
    if len(args) == 1 and isinstance(args[0], Sequence) and not isinstance(args[0], str):
        args = tuple(args[0])
    argv = [str(arg) for arg in args]
    if subprocess:
        done = _subprocess.run(command(*argv), capture_output=True, text=True, input=input,
                               env=process_env(env), cwd=cwd, timeout=timeout, check=False)
        return Outcome(done.returncode, done.stdout, done.stderr)
    assert cwd is None, "cwd is for a process: monkeypatch.chdir in process"
    from dpmic_dask.batch.cli import main

    result = CliRunner(env=dict(env) if env else None).invoke(
        main, argv, input=input, catch_exceptions=not raise_errors)
    return Outcome(result.exit_code, result.stdout, result.stderr)
