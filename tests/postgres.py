"""A throwaway PostgreSQL server for the tests, started from the Debian binaries.

If ``DPMIC_TEST_POSTGRES_URL`` is set, that server is used instead. Missing
binaries are a test failure with instructions, never a skip: ``.ci/run``
installs the ``postgresql`` package.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import uuid

import pytest


def _bindir() -> str:
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(os.path.realpath(found))
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not candidates:
        pytest.fail("PostgreSQL server binaries not found: apt-get install postgresql "
                    "(or set DPMIC_TEST_POSTGRES_URL)")
    return os.path.dirname(candidates[-1])


def _as_server_user(cmd):
    if os.geteuid() == 0:  # initdb and postgres refuse to run as root
        return ["runuser", "-u", "postgres", "--", *cmd]
    return cmd


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(base_dir) -> tuple[str, callable]:
    bindir = _bindir()
    data = os.path.join(base_dir, "pgdata")
    os.makedirs(data)
    if os.geteuid() == 0:
        shutil.chown(base_dir, "postgres")
        shutil.chown(data, "postgres")
    port = _free_port()
    subprocess.run(_as_server_user([f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "dpmic",
                                    "--no-sync", "-E", "UTF8"]),
                   check=True, capture_output=True)
    subprocess.run(_as_server_user([
        f"{bindir}/pg_ctl", "-D", data, "-w", "-l", os.path.join(data, "server.log"),
        "-o", f"-F -p {port} -k {data} -c listen_addresses=127.0.0.1", "start"]),
        check=True, capture_output=True)

    def stop():
        subprocess.run(_as_server_user([f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop"]),
                       capture_output=True)

    return f"postgresql://dpmic@127.0.0.1:{port}/postgres", stop


def fresh_database(server_url: str) -> str:
    """Create an empty database on the server and return its URL."""
    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server_url.rsplit("/", 1)[0] + "/" + name
