"""Private MIC on a real survey table that ships inside statsmodels.

The 1974 Redbook survey of 6,366 women (statsmodels' ``fair`` dataset); needs
``pip install 'dpmic_dask[examples]'``. Bounds come from the survey's codebook,
not from the data.
"""

import statsmodels.api as sm

import dpmic_dask  # noqa: F401  (registers .dpmic)

data = sm.datasets.fair.load_pandas().data
BOUNDS = {  # the codebook's ranges
    "rate_marriage": (1, 5),
    "age": (17.5, 42),
    "yrs_married": (0.5, 23),
    "children": (0, 5.5),
    "religious": (1, 4),
    "educ": (9, 20),
    "affairs": (0, 60),
}
result = data.dpmic.pairwise(2.0, delta=1e-6, bounds=BOUNDS)  # 21 pairs: Gaussian wins
table = result.to_pandas().sort_values("mic", ascending=False)
print(table[["x", "y", "mic", "ci95"]].head(8).to_string(index=False, float_format="%.3f"))
print()
print(result.report())
