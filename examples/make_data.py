"""Write a small example table to examples/data/ as Parquet (for batch_job.toml)."""

from pathlib import Path

import numpy as np
import pandas as pd

out = Path(__file__).parent / "data"
out.mkdir(exist_ok=True)
gen = np.random.default_rng(11)  # example data only
for part in range(4):
    n = 50_000
    age = gen.uniform(18, 90, n)
    pd.DataFrame({
        "age": age,
        "income": 20_000 + 60_000 * np.sin((age - 18) / 72 * np.pi) + gen.normal(0, 8_000, n),
        "visits": gen.poisson(3, n).astype(float),
        "bmi": gen.normal(26, 4, n),
    }).to_parquet(out / f"part-{part}.parquet", index=False)
try:
    shown = out.resolve().relative_to(Path.cwd().resolve())
except ValueError:
    shown = out
print(f"wrote 4 Parquet files ({4 * 50_000:,} rows) to {shown}")
