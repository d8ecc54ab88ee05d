"""The engine's knobs (``task_memory``, ``split_every``, ``progress``) live in
Dask's configuration under ``dpmic``: their defaults are the former per-call
defaults, ``dpmic_dask.config.set`` (and ``dask.config.set``, and ``DASK_DPMIC__*``
environment variables) change what a release uses, a per-call argument overrides
them, and bad values are refused before anything is read."""

import contextlib

import dask
import dask.config
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask
from dpmic_dask import config
from dpmic_dask.backends import daskinputs
from dpmic_dask.batch import runner
from dpmic_dask.batch.jobs import load_job
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.release import stages
from dpmic_dask.stats.limits import DEFAULT_SPLIT_EVERY, DEFAULT_TASK_MEMORY
from tests.jobfiles import write_job
from tests.probes import recorded

BOUNDS = {name: (0.0, 1.0) for name in "abcd"}


@pytest.fixture(scope="module")
def frame():
    gen = np.random.default_rng(5)
    return pd.DataFrame(gen.uniform(0, 1, (400, 4)), columns=list("abcd"))


@pytest.fixture
def sizing(monkeypatch):
    """The ``(split_every, task_memory)`` every block size of a release is computed
    from, as the release passed them to the sizing function."""
    seen = []
    original = stages.pairs_per_block

    def recorded(cells, split_every, task_memory):
        seen.append((split_every, task_memory))
        return original(cells, split_every, task_memory)

    monkeypatch.setattr(stages, "pairs_per_block", recorded)
    return seen


def test_the_defaults_are_the_former_per_call_defaults():
    assert config.get("task_memory") == DEFAULT_TASK_MEMORY == 256 * 2**20
    assert config.get("split_every") == DEFAULT_SPLIT_EVERY == 8
    assert config.get("progress") is None  # on when stderr is a terminal
    # registered as Dask defaults (kept by dask.config.refresh), in Dask's spelling
    assert any("dpmic" in d for d in dask.config.defaults)
    assert dask.config.get("dpmic.split-every") == 8
    assert config.engine() == config.Engine(DEFAULT_TASK_MEMORY, DEFAULT_SPLIT_EVERY, None)


def test_a_release_uses_the_defaults(frame, sizing):
    frame.dpmic.pairwise(1.0, bounds=BOUNDS, B=20, c=2)
    assert sizing and set(sizing) == {(DEFAULT_SPLIT_EVERY, DEFAULT_TASK_MEMORY)}


def test_config_set_changes_what_a_release_uses_and_is_undone_on_exit(frame, sizing):
    with config.set(task_memory="1 MiB", split_every=3):
        assert config.get("task_memory") == 2**20
        plan = frame.dpmic.plan(1.0, bounds=BOUNDS, B=20, c=2)
        assert (plan.planned.request.task_memory, plan.planned.request.split_every) == (
            2**20, 3)
        frame.dpmic.pairwise(1.0, bounds=BOUNDS, B=20, c=2)
    assert set(sizing) == {(3, 2**20)}
    assert config.get("task_memory") == DEFAULT_TASK_MEMORY
    assert config.get("split_every") == DEFAULT_SPLIT_EVERY


def test_config_set_without_with_sets_until_undone():
    setting = config.set(split_every=5)
    try:
        assert config.get("split_every") == 5
        assert dask.config.get("dpmic.split-every") == 5
    finally:
        setting.__exit__(None, None, None)
    assert config.get("split_every") == DEFAULT_SPLIT_EVERY


def test_dask_config_set_works_in_either_spelling(frame):
    with dask.config.set({"dpmic.task-memory": "2 MiB"}):
        assert config.get("task_memory") == 2 * 2**20
        assert frame.dpmic.plan(1.0, bounds=BOUNDS).planned.request.task_memory == 2 * 2**20
    with dask.config.set({"dpmic.task_memory": 3 * 2**20}):
        assert config.get("task-memory") == 3 * 2**20


def test_task_memory_changes_the_blocks_of_pairs(frame, monkeypatch):
    """An observable effect, not only the recorded value: at 1 MiB the six pairs of
    a fine grid are counted in several blocks, at the default in one."""
    blocks = []
    original = stages.block_size

    def recorded(request, B, c):
        size = original(request, B, c)
        blocks.append(-(-request.n_pairs // size))
        return size

    monkeypatch.setattr(stages, "block_size", recorded)
    frame.dpmic.pairwise(1.0, bounds=BOUNDS, B=200, c=5)
    with config.set(task_memory=2**20):
        frame.dpmic.pairwise(1.0, bounds=BOUNDS, B=200, c=5)
    assert blocks[0] == 1 and blocks[-1] > 1


def test_a_per_call_argument_overrides_the_config(frame, sizing):
    with config.set(task_memory=2**20, split_every=3):
        frame.dpmic.pairwise(1.0, bounds=BOUNDS, B=20, c=2, task_memory=2**22, split_every=4)
        plan = frame.dpmic.plan(1.0, bounds=BOUNDS, task_memory="8 MiB")
    assert set(sizing) == {(4, 2**22)}
    assert plan.planned.request.task_memory == 8 * 2**20


def test_the_dask_backend_groups_partitions_by_the_configured_task_memory(frame, monkeypatch):
    seen = recorded(monkeypatch, daskinputs, "spans_of",
                    lambda rows, parts, columns, task_memory, tasks: task_memory)
    lazy = dd.from_pandas(frame, npartitions=3)
    with dask.config.set(scheduler="synchronous"), config.set(task_memory="4 MiB"):
        lazy.dpmic.pairwise_nonprivate(bounds=BOUNDS, B=20, c=2)
    assert seen and set(seen) == {4 * 2**20}


@pytest.mark.parametrize("values", [
    {"task_memory": 10}, {"task_memory": 2**41}, {"task_memory": "lots"},
    {"task_memory": True}, {"split_every": 1}, {"split_every": 2.5},
    {"progress": "yes"}, {"progres": True},
])
def test_bad_values_are_refused_when_set(values):
    with pytest.raises(InvalidParameterError):
        config.set(**values)
    assert config.engine() == config.Engine(DEFAULT_TASK_MEMORY, DEFAULT_SPLIT_EVERY, None)


def test_bad_values_set_through_dask_are_refused_when_read(frame, sizing):
    with dask.config.set({"dpmic.split-every": 1}):
        with pytest.raises(InvalidParameterError, match="split_every"):
            config.get("split_every")
        with pytest.raises(InvalidParameterError, match="split_every"):
            frame.dpmic.pairwise(1.0, bounds=BOUNDS, B=20, c=2)
    with dask.config.set({"dpmic.task-memory": "a lot"}):
        with pytest.raises(InvalidParameterError, match="task_memory"):
            frame.dpmic.plan(1.0, bounds=BOUNDS)
    assert sizing == []  # refused before any pair was counted


def test_bad_per_call_values_are_refused(frame):
    with pytest.raises(InvalidParameterError, match="task_memory"):
        frame.dpmic.plan(1.0, bounds=BOUNDS, task_memory=10)
    with pytest.raises(InvalidParameterError, match="progress"):
        frame.dpmic.pairwise(1.0, bounds=BOUNDS, progress="yes")


def test_environment_variables_work_as_dask_s(monkeypatch, frame):
    monkeypatch.setenv("DASK_DPMIC__TASK_MEMORY", "64 MiB")
    monkeypatch.setenv("DASK_DPMIC__SPLIT_EVERY", "4")
    monkeypatch.setenv("DASK_DPMIC__PROGRESS", "false")
    try:
        dask.config.refresh()
        assert config.engine() == config.Engine(64 * 2**20, 4, False)
        request = frame.dpmic.plan(1.0, bounds=BOUNDS).planned.request
        assert (request.task_memory, request.split_every) == (64 * 2**20, 4)
    finally:
        for name in ("TASK_MEMORY", "SPLIT_EVERY", "PROGRESS"):
            monkeypatch.delenv(f"DASK_DPMIC__{name}")
        dask.config.refresh()
    assert config.engine() == config.Engine(DEFAULT_TASK_MEMORY, DEFAULT_SPLIT_EVERY, None)


def test_progress_is_read_when_the_release_runs(frame, monkeypatch):
    seen = []
    original = dpmic_dask.release.public_plan.run_release

    def recorded(*args, progress, **kwargs):
        seen.append(progress)
        return original(*args, progress=progress, **kwargs)

    monkeypatch.setattr(dpmic_dask.release.public_plan, "run_release", recorded)
    with config.set(progress=False):
        frame.dpmic.pairwise(1.0, bounds=BOUNDS, B=20, c=2)
        frame.dpmic.pairwise(1.0, bounds=BOUNDS, B=20, c=2, progress=True)
    frame.dpmic.pairwise(1.0, bounds=BOUNDS, B=20, c=2)
    assert seen == [False, True, None]


def test_config_is_public():
    assert "config" in dpmic_dask.__all__
    assert dpmic_dask.config is config


def _job(tmp_path, cluster=None):
    path = write_job(tmp_path / "job.toml", name="knobs",
                     input={"paths": [f"{tmp_path}/*.parquet"]},
                     columns={"a": [0, 1], "b": [0, 1]}, output={"path": f"{tmp_path}/out"},
                     cluster=cluster, ledger=f"sqlite:///{tmp_path}/l.db")
    return load_job(path)


@pytest.mark.parametrize(("cluster", "expected"), [
    ({"task_memory": "2 MiB"}, 2 * 2**20),  # the job file's, for the run
    (None, 4 * 2**20),  # the process's configuration
])
def test_a_job_s_cluster_task_memory_sets_the_config_for_its_run(tmp_path, monkeypatch, frame,
                                                                 cluster, expected):
    seen = {}

    def release(data, plan, **kwargs):
        seen.update(config=config.get("task_memory"), plan=plan.request.task_memory)

    monkeypatch.setattr(runner.cluster, "open_cluster", lambda **kwargs: contextlib.nullcontext())
    monkeypatch.setattr(runner.jobio, "load_input", lambda job: frame)
    monkeypatch.setattr(runner, "run_release", release)
    job = _job(tmp_path, cluster)
    with config.set(task_memory="4 MiB"):
        runner._release(job, None, progress=False)
        assert config.get("task_memory") == 4 * 2**20  # the run's setting is undone
    assert seen == {"config": expected, "plan": expected}
