"""Quickstart: private MIC of every column pair of a Dask DataFrame."""

import dask.dataframe as dd
import numpy as np
import pandas as pd

import dpmic_dask  # noqa: F401  (registers the .dpmic accessor)

gen = np.random.default_rng(7)
n = 100_000
age = gen.uniform(18, 90, n)
df = pd.DataFrame({
    "age": age,
    "income": 20_000 + 60_000 * np.sin((age - 18) / 72 * np.pi) + gen.normal(0, 8_000, n),
    "visits": gen.poisson(3, n).astype(float),
})
ddf = dd.from_pandas(df, npartitions=4)

result = ddf.dpmic.pairwise(
    eps=1.0,
    bounds={"age": (0, 100), "income": (0, 150_000), "visits": (0, 20)},
)
print(result.to_pandas()[["x", "y", "mic", "ci95", "mechanism", "B", "c"]])
print(result.report())
