"""A categorical PostgreSQL ``text`` column in a batch job (the real server the
tests start): read by the SQL reader, coded by its public list, released."""

import numpy as np
import pandas as pd

from dpmic_dask.batch.cli import Exit
from dpmic_dask.batch.jobio import sql_engine
from dpmic_dask.privacy.accounting import Budget
from dpmic_dask.privacy.ledger import SQLLedger
from tests.cli import invoke
from tests.jobfiles import write_job


def test_a_text_column_with_a_public_list(postgres_url, tmp_path):
    gen = np.random.default_rng(4)  # test data only
    n = 3000
    region = gen.choice(["north", "south", "east", "unlisted", None], n)
    amount = np.array([{"north": 10, "south": 20, "east": 30}.get(r, 40) for r in region])
    frame = pd.DataFrame({"id": np.arange(n), "region": region,
                          "amount": amount + gen.normal(0, 2, n), "noise": gen.uniform(0, 1, n)})
    frame.to_sql("customers", sql_engine(postgres_url), index=False)
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    SQLLedger(ledger).init("shop", Budget(2.0))
    job = write_job(tmp_path / "pg.toml", name="regions", dataset="shop",
                    input={"sql_url": postgres_url, "sql_table": "customers",
                           "partition_column": "id", "partition_bounds": [0, n],
                           "partitions": 3},
                    columns={"region": {"categories": ["north", "south", "east"]},
                             "amount": [0, 50], "noise": [0, 1]},
                    eps=2.0, privacy={"nulls": "category"}, ledger=ledger)
    ran = invoke("run", job, "--run-id", "pg-cat")
    assert ran.exit_code == Exit.OK, ran.output
    out = pd.read_parquet(tmp_path / "out").set_index(["x", "y"])
    assert len(out) == 3 and (out.n == n).all()
    assert out.loc[("region", "amount"), "mic"] > 0.6
    assert out.loc[("region", "noise"), "mic"] < 0.1
    (record,) = SQLLedger(ledger).history("shop")
    assert record.cost.epsilon == 2.0
