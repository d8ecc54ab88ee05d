import os
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest
from distributed import Client
from hypothesis import Phase, settings

from tests.postgres import fresh_database, start_server

# tools/mutants.py: a failing example is enough there; shrinking it takes minutes
settings.register_profile("mutants", phases=[Phase.explicit, Phase.reuse, Phase.generate])

#: Modules whose tests start Dask clusters of worker processes, `dpmic` as a process,
#: or jobs on their own local cluster: the `cluster` tier (`pytest` alone skips it;
#: `.ci/run` runs every tier).
CLUSTER_MODULES = frozenset(f"integration/{name}.py" for name in (
    "test_batch_faults", "test_bounds_check", "test_causal_cluster", "test_causal_jobs",
    "test_categories_jobs", "test_cli", "test_cli_budget", "test_cluster_lifecycle",
    "test_distributed", "test_jobs", "test_kinds_jobs", "test_ledger_sqlite", "test_memory",
    "test_release_journal", "test_release_keys", "test_seams", "test_units_jobs",
))


def pytest_collection_modifyitems(config, items):
    """Mark the tiers: ``postgres`` (a PostgreSQL server), ``cluster`` (worker
    processes, `dpmic` processes, jobs on local clusters); ``slow`` is marked by
    hand. ``pytest`` alone deselects all three (pyproject.toml); ``.ci/run`` runs
    them all."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & {"postgres_server", "postgres_url"} or "postgres" in item.path.name:
            item.add_marker(pytest.mark.postgres)
        where = f"{item.path.parent.name}/{item.path.name}"
        if ("cli_cluster" in fixtures or where in CLUSTER_MODULES
                or "processes" in item.name):
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def postgres_server():
    url = os.environ.get("DPMIC_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    # directly under /tmp: pytest's own temp tree is not traversable by the server user
    base = tempfile.mkdtemp(prefix="dpmic-pg-")
    url, stop = start_server(base)
    try:
        yield url
    finally:
        stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server):
    """URL of a new, empty database on the test server."""
    return fresh_database(postgres_server)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def dask_cli():
    exe = shutil.which("dask", path=os.path.dirname(sys.executable)) or shutil.which("dask")
    if exe is None:
        pytest.fail("the 'dask' command is not installed alongside this Python")
    return exe


@pytest.fixture
def cli_cluster(tmp_path):
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    procs = []
    log = open(tmp_path / "cluster.log", "w")
    try:
        procs.append(subprocess.Popen(
            [dask_cli(), "scheduler", "--host", "127.0.0.1", "--port", str(port),
             "--no-dashboard"], stdout=log, stderr=log, env=env))
        workers = [
            subprocess.Popen([dask_cli(), "worker", address, "--nthreads", "1",
                              "--no-dashboard", "--host", "127.0.0.1"],
                             stdout=log, stderr=log, env=env)
            for _ in range(2)
        ]
        procs += workers
        client = Client(address, timeout=60)
        client.wait_for_workers(2, timeout=120)
        yield client, workers
        client.close()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)  # reap it: a Popen must not outlive its process
        log.close()
