import os
import shutil
import tempfile

import pytest

from tests.postgres import fresh_database, start_server


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
