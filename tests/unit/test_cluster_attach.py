"""cluster.attach: once per client and scheduler, and never silently skipped."""

import pytest

from dpmic_dask.batch.cluster import attach, check_local_workers, max_local_workers
from dpmic_dask.errors import ClusterError, InvalidParameterError


class FakeClient:
    def __init__(self, address="tcp://127.0.0.1:1", fail=None):
        self.scheduler = type("Rpc", (), {"address": address})()
        self.fail = fail
        self.registered = []

    def register_plugin(self, plugin):
        if self.fail:
            raise self.fail
        self.registered.append(plugin.name)


def test_attach_registers_the_named_plugin_once_per_client_and_scheduler():
    client = FakeClient()
    attach(client)
    attach(client)
    assert client.registered == ["dpmic-redact-task-errors"]
    client.scheduler.address = "tcp://127.0.0.1:2"  # reconnected elsewhere: register again
    attach(client)
    assert len(client.registered) == 2
    other = FakeClient()
    attach(other)
    assert other.registered == ["dpmic-redact-task-errors"]


def test_a_cluster_that_cannot_take_the_redaction_runs_nothing():
    client = FakeClient(fail=RuntimeError("'SECRET' in a message"))
    with pytest.raises(ClusterError, match=r"log redaction.*\(RuntimeError\); nothing was "
                                           "computed") as info:
        attach(client)
    assert "SECRET" not in str(info.value)
    client.fail = None
    attach(client)  # not remembered as attached after the failure
    assert client.registered == ["dpmic-redact-task-errors"]


@pytest.mark.parametrize("workers", [0, -1, 2.0, True, "2"])
def test_local_worker_counts_are_checked(workers):
    with pytest.raises(InvalidParameterError, match="cluster.workers must be an integer"):
        check_local_workers(workers)


def test_the_local_worker_cap_follows_the_cores():
    limit = max_local_workers()
    assert limit >= 4 and limit % 4 == 0
    assert check_local_workers(limit) == limit
    with pytest.raises(InvalidParameterError, match="set cluster.scheduler"):
        check_local_workers(limit + 1)


@pytest.mark.parametrize("scheduler, given, expected", [
    (None, None, 120.0), ("tcp://127.0.0.1:1", None, 30.0),
    (None, 7, 7.0), ("tcp://127.0.0.1:1", 7, 7.0),
])
def test_a_local_cluster_gets_longer_to_start_than_a_scheduler_to_answer(
        monkeypatch, scheduler, given, expected):
    """Without cluster.timeout, a local cluster's workers get 120 s to start (slow on a
    loaded host, not failed) and a scheduler 30 s to answer; a given timeout is used
    for both."""
    from dpmic_dask.batch import cluster

    seen = []

    def stop(*args, **kwargs):
        seen.append(float(args[-1]))
        raise ClusterError("stopped here")

    monkeypatch.setattr(cluster, "_start_local", stop)
    monkeypatch.setattr(cluster, "probe_scheduler", stop)
    with pytest.raises(ClusterError, match="stopped here"):
        with cluster.open_cluster(scheduler=scheduler, workers=1, timeout=given):
            pass
    assert seen == [expected]
