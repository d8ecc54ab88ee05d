"""A batch job end to end on a real PostgreSQL server (input table, ledger and
output table) and a command-line-started Dask cluster on 127.0.0.1."""

import numpy as np
import pandas as pd

from dpmic_dask.batch.cli import Exit
from dpmic_dask.batch.jobio import sql_engine
from dpmic_dask.privacy.accounting import Budget
from dpmic_dask.privacy.ledger import SQLLedger
from tests.cli import invoke
from tests.jobfiles import write_job


def test_postgres_job_on_a_real_cluster(postgres_url, cli_cluster, tmp_path):
    client, _ = cli_cluster
    gen = np.random.default_rng(1)  # test data only
    a = gen.random(3000)
    frame = pd.DataFrame({"a": a, "b": (a - 0.5) ** 2 + 0.01 * gen.normal(size=3000),
                          "c": gen.random(3000)})
    frame.assign(id=np.arange(3000)).to_sql("measurements", sql_engine(postgres_url),
                                            index=False)
    SQLLedger(postgres_url).init("lab", Budget(1.5))

    def job(dataset="lab", **source):
        """The job file: ``source`` changes the input's keys."""
        return write_job(tmp_path / "pg.toml", name="lab-export", dataset=dataset,
                         input={"sql_url": postgres_url, "sql_table": "measurements", **source,
                                "partition_column": "id", "partition_bounds": [0, 3000],
                                "partitions": 4},
                         columns={"a": [0, 1], "b": [0, 0.5], "c": [0, 1]},
                         output={"sql_url": postgres_url, "sql_table": "dpmic_results"},
                         cluster={"scheduler": client.scheduler.address}, ledger=postgres_url)

    path = job()
    first = invoke("run", path, "--run-id", "day-1")
    assert first.exit_code == Exit.OK, first.output
    out = pd.read_sql_table("dpmic_results", sql_engine(postgres_url))
    assert len(out) == 3 and (out.run_id == "day-1").all() and (out.n == 3000).all()
    ab = out[(out.x == "a") & (out.y == "b")].mic.item()
    assert ab > out[(out.x == "a") & (out.y == "c")].mic.item()
    # same run id again: no new charge, no duplicate rows
    again = invoke("run", path, "--run-id", "day-1")
    assert again.exit_code == Exit.OK and "already released" in again.output
    assert len(pd.read_sql_table("dpmic_results", sql_engine(postgres_url))) == 3
    # the next day does not fit the remaining 0.5
    refused = invoke("run", path, "--run-id", "day-2")
    assert refused.exit_code == Exit.BUDGET
    assert len(SQLLedger(postgres_url).history("lab")) == 1
    # an unreachable input database: one line, nothing charged (on a dataset
    # whose budget could pay, so that the input is what the run meets)
    SQLLedger(postgres_url).init("lab-2", Budget(5.0))
    bad = job("lab-2", sql_url="postgresql://nobody@127.0.0.1:1/none", sql_table="m")
    unreachable = invoke("run", bad, "--run-id", "day-3")
    assert unreachable.exit_code == Exit.UNAVAILABLE
    assert "cannot reach the SQL input" in unreachable.output
    assert "nothing answers at that address and port" in unreachable.output
    # the server answers, the database is not there: said so, naming neither
    missing = job("lab-2", sql_url=postgres_url.rsplit("/", 1)[0] + "/no_such_input_db",
                  sql_table="m")
    absent = invoke("run", missing, "--run-id", "day-3")
    assert absent.exit_code == Exit.UNAVAILABLE
    assert "that database does not exist" in absent.output
    assert "no_such_input_db" not in absent.output
    assert len(SQLLedger(postgres_url).history("lab")) == 1
    assert SQLLedger(postgres_url).history("lab-2") == []
