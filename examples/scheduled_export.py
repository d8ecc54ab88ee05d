"""A scheduled export: release every "day" until the dataset's budget runs out.

Uses a persistent SQLite ledger in a temporary folder; in production the ledger
is a file or PostgreSQL database that outlives the jobs (see deploy/).
"""

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

import dpmic_dask as dm
from dpmic_dask.privacy.accounting import Budget
from dpmic_dask.privacy.ledger import SQLLedger

gen = np.random.default_rng(5)  # example data only
x = gen.uniform(0, 1, 20_000)
table = pd.DataFrame({"x": x, "y": np.cos(7 * x) + gen.normal(0, 0.2, x.size),
                      "z": gen.uniform(0, 1, x.size)})
bounds = {"x": (0, 1), "y": (-1.5, 1.5), "z": (0, 1)}

with tempfile.TemporaryDirectory() as folder:
    ledger = SQLLedger(f"sqlite:///{Path(folder) / 'ledger.db'}")
    ledger.init("daily-table", Budget(2.0))
    for day in range(1, 7):
        try:
            result = table.dpmic.pairwise(0.5, bounds=bounds, ledger=ledger,
                                          dataset="daily-table", label=f"day {day}")
        except dm.BudgetExceededError as exc:
            print(f"day {day}: refused -- {exc}")
            break
        mic = result.matrix().loc["x", "y"]
        print(f"day {day}: released MIC(x, y) = {mic:.3f}; "
              f"remaining {ledger.remaining('daily-table')} of 2.0")
    print(f"{len(ledger.history('daily-table'))} releases recorded")
