"""deploy/: every file parses and runs the right command lines."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dpmic_dask.batch.jobs import load_job
from tests.cli import invoke

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def docs(name):
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def by_kind(name):
    return {d["kind"]: d for d in docs(name)}


def test_job_files_validate():
    for path in sorted((DEPLOY / "jobs").glob("*.toml")):
        job = load_job(path)
        assert len(job.bounds) >= 2
        result = invoke(["validate", str(path)])
        assert result.exit_code == 0, result.output


def test_configmap_carries_the_same_job_files():
    config = by_kind("kubernetes/jobs-configmap.yaml")
    data = config["ConfigMap"]["data"]
    for path in (DEPLOY / "jobs").glob("*.toml"):
        shipped = "\n".join(line for line in path.read_text().splitlines()
                            if line and not line.startswith("#"))
        in_map = "\n".join(line for line in data[path.name].splitlines() if line)
        assert shipped == in_map, path.name
    assert config["Secret"]["stringData"]["url"].startswith("postgresql://")


def test_daskjob_runs_dpmic_on_a_dask_cluster():
    job = by_kind("kubernetes/daskjob.yaml")["DaskJob"]
    assert job["apiVersion"] == "kubernetes.dask.org/v1"
    container = job["spec"]["job"]["spec"]["containers"][0]
    assert container["args"][:3] == ["dpmic", "run", "/jobs/parquet-batch.toml"]
    assert container["env"][0]["name"] == "DPMIC_LEDGER"
    cluster = job["spec"]["cluster"]["spec"]
    assert cluster["worker"]["replicas"] >= 1
    assert cluster["worker"]["spec"]["containers"][0]["args"][:2] == ["dask", "worker"]
    assert cluster["scheduler"]["spec"]["containers"][0]["args"] == ["dask", "scheduler"]


def test_cronjob_runs_the_daily_export_idempotently():
    kinds = by_kind("kubernetes/cronjob.yaml")
    cron = kinds["CronJob"]
    assert cron["apiVersion"] == "batch/v1"
    assert len(cron["spec"]["schedule"].split()) == 5
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    container = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    command = container["args"][0]
    assert shlex.split(command)[:4] == ["dpmic", "run", "/jobs/daily.toml", "--run-id"]
    env = {e["name"]: e for e in container["env"]}
    assert env["DASK_SCHEDULER_ADDRESS"]["value"].startswith("tcp://dpmic-warehouse-scheduler")
    assert kinds["DaskCluster"]["metadata"]["name"] == "dpmic-warehouse"


def test_compose_has_scheduler_workers_database_and_one_shot_job():
    services = docs("docker-compose.yml")[0]["services"]
    assert set(services) == {"postgres", "scheduler", "worker", "job"}
    assert services["scheduler"]["command"][:2] == ["dask", "scheduler"]
    assert services["worker"]["command"][:3] == ["dask", "worker", "tcp://scheduler:8786"]
    job_command = services["job"]["command"][-1]
    assert "dpmic budget init --dataset warehouse.patients" in job_command
    assert "dpmic run /jobs/daily.toml --run-id" in job_command
    assert services["job"]["environment"]["DASK_SCHEDULER_ADDRESS"] == "tcp://scheduler:8786"


def test_dockerfile_and_cron():
    lines = [ln for ln in (DEPLOY / "Dockerfile").read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines[0].startswith("FROM ghcr.io/dask/dask:")
    assert any("pip install" in ln and "/opt/dpmic[postgres,plot]" in ln for ln in lines)
    assert "COPY deploy/jobs /jobs" in lines
    entries = [ln for ln in (DEPLOY / "cron/dpmic.cron").read_text().splitlines()
               if ln and not ln.startswith("#") and "=" not in ln.split()[0]]
    assert len(entries) == 1
    fields = entries[0].split()
    schedule = re.compile(r"^(\*|\d+(-\d+)?)(/\d+)?(,(\d+(-\d+)?))*$")
    assert all(schedule.match(f) for f in fields[:5]), fields[:5]
    assert fields[6:9] == ["dpmic", "run", "/etc/dpmic/daily.toml"]


def test_dockerfile_warm_up_snippet_runs():
    text = (DEPLOY / "Dockerfile").read_text()
    snippet = re.search(r'RUN python -c "(.*?)"\n', text, flags=re.S).group(1)
    code = snippet.replace("\\\n", "\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("env", [{}, {"DASK_SCHEDULER_ADDRESS": "tcp://s:8786", "DPMIC_LEDGER": "sqlite:///x.db"}])
def test_job_environment_defaults(monkeypatch, env):
    for key in ("DASK_SCHEDULER_ADDRESS", "DPMIC_LEDGER"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    job = load_job(DEPLOY / "jobs" / "daily.toml")
    assert job.scheduler == env.get("DASK_SCHEDULER_ADDRESS")
    assert job.ledger_url == env.get("DPMIC_LEDGER", "sqlite:///dpmic-ledger.db")
