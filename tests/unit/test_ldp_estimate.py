"""Local model, server pieces: simplex projection, MICr of a joint table, support
counting against the protocol's definition, partition merging."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.errors import InvalidDataError, InvalidParameterError
from dpmic_dask.ldp import make_design, randomize
from dpmic_dask.ldp.bits import ByteSource
from dpmic_dask.ldp.estimate import mic_of_joint, normal_draws, project_simplex
from dpmic_dask.ldp.protocols import make_protocol, unpack_bits, value_digits
from dpmic_dask.ldp.server import pairwise, partition_supports
from dpmic_dask.stats.counting import bins as equal_width_bins
from dpmic_dask.stats.exact import micr
from dpmic_dask.stats.grids import master_grid_family


def test_projection_is_the_closest_point_of_the_simplex():
    gen = np.random.default_rng(0)  # test data only
    for _ in range(50):
        v = gen.normal(0.1, 0.3, size=9)
        w = project_simplex(v)
        assert w.min() >= 0 and abs(w.sum() - 1) < 1e-12
        # optimality: no random point of the simplex is closer
        others = gen.dirichlet(np.ones(9), size=2000)
        assert np.linalg.norm(v - w) <= np.linalg.norm(v - others, axis=1).min() + 1e-12
    p = np.array([0.2, 0.3, 0.5])
    assert np.allclose(project_simplex(p), p)


def test_mic_of_joint_matches_micr_of_the_coarsened_data():
    """On a grid whose bins every equipartition of the family respects (bins = 12,
    B = 9: sizes 2, 3, 4), MICr of the estimated table is MICr of the data itself."""
    gen = np.random.default_rng(1)  # test data only
    x = gen.uniform(0, 1, 5000)
    y = np.clip(x + gen.normal(0, 0.15, 5000), 0, 1)
    m, B, c = 12, 9, 1
    family = master_grid_family(B, c)
    i = equal_width_bins(x, (0.0, 1.0), m)
    j = equal_width_bins(y, (0.0, 1.0), m)
    joint = np.bincount(i * m + j, minlength=m * m) / x.size
    # data moved to its cell's centre: the same MICr
    value = mic_of_joint(joint, m, family)
    assert value > 0.3
    assert abs(value - micr((i + 0.5) / m, (j + 0.5) / m, x_bounds=(0, 1), y_bounds=(0, 1),
                            B=B, c=c)) < 1e-6
    # a function is 1, independence is 0
    diag = np.eye(m).ravel() / m
    assert abs(mic_of_joint(diag, m, master_grid_family(m * m, 2)) - 1.0) < 1e-9
    flat = np.full(m * m, 1.0 / (m * m))
    assert mic_of_joint(flat, m, master_grid_family(m * m, 2)) < 1e-9


@pytest.mark.parametrize("name", ["grr", "olh", "oue"])
def test_support_counts_follow_the_definition(name):
    proto = make_protocol(name, 1.5, 12)
    values = np.arange(600) % 12
    reports = proto.encode(values, ByteSource())
    pair = np.arange(600) % 3
    got = proto.supports(reports, pair, 3)
    want = np.zeros((3, 12), dtype=np.int64)
    for r in range(600):
        for v in range(12):
            if name == "grr":
                hit = reports["y"][r] == v
            elif name == "olh":
                a = value_digits(np.array([reports["seed"][r]]), proto.g, proto.w)[0]
                d = value_digits(np.array([v]), proto.g, proto.w)[0]
                hit = (a * d).sum() % proto.g == reports["y"][r]
            else:
                hit = unpack_bits({k: v_[r:r + 1] for k, v_ in reports.items()}, 12)[0, v]
            want[pair[r], v] += int(hit)
    assert np.array_equal(got, want)


def test_partitions_merge_exactly():
    df = pd.DataFrame({"a": np.linspace(0, 1, 3000), "b": np.linspace(1, 0, 3000) ** 2,
                       "c": np.cos(np.arange(3000))})
    reports = randomize(df, 1.0, bounds={"a": (0, 1), "b": (0, 1), "c": (-1, 1)})
    design = reports.attrs["dpmic_ldp"]
    whole = partition_supports(reports, design)
    parts = [partition_supports(reports.iloc[s:s + 700], design) for s in range(0, 3000, 700)]
    assert np.array_equal(whole[0], sum(p[0] for p in parts))
    assert np.array_equal(whole[1], sum(p[1] for p in parts))
    assert whole[1].sum() == 3000


def test_malformed_reports_refused():
    df = pd.DataFrame({"a": [0.1] * 20, "b": [0.2] * 20})
    reports = randomize(df, 1.0, bounds={"a": (0, 1), "b": (0, 1)}, protocol="grr")
    bad = reports.copy()
    bad.loc[0, "y"] = 10_000
    bad.attrs = reports.attrs
    with pytest.raises(InvalidDataError):
        pairwise(bad)
    with pytest.raises(InvalidDataError):
        pairwise(reports.drop(columns=["y"]), design=reports.attrs["dpmic_ldp"])


def test_bootstrap_draws_are_deterministic_and_standard_normal():
    a = normal_draws(b"key", 20000)
    assert np.array_equal(a, normal_draws(b"key", 20000))
    assert not np.array_equal(a, normal_draws(b"other", 20000))
    assert abs(a.mean()) < 0.03 and abs(a.std() - 1) < 0.03


def test_same_reports_same_result():
    df = pd.DataFrame({"a": np.linspace(0, 1, 2000), "b": np.sin(np.linspace(0, 6, 2000))})
    reports = randomize(df, 2.0, bounds={"a": (0, 1), "b": (-1, 1)})
    one = pairwise(reports, replicates=30).to_pandas()
    two = pairwise(reports, replicates=30).to_pandas()
    pd.testing.assert_frame_equal(one, two)


def test_design_defaults():
    design = make_design(1.0, bounds={"a": (0, 1), "b": (0, 1)}, rows=1000)
    assert design["B"] == design["bins"] ** 2
    # more people per pair or more eps: a finer grid (never finer with less)
    from dpmic_dask.ldp.client import default_bins

    grid = [[default_bins(eps, rows, 6) for rows in (10**4, 10**5, 10**6, 10**7)]
            for eps in (0.5, 1.0, 2.0, 4.0, 8.0)]
    assert all(row == sorted(row) for row in grid)
    assert all(list(col) == sorted(col) for col in zip(*grid))
    assert default_bins(1.0, 10**5, 6) == 4 and default_bins(8.0, 10**6, 6) == 12


def test_devices_share_one_design():
    design = make_design(2.0, bounds={"a": (0, 1), "b": (0, 1)}, rows=10**5)
    rows = [pd.DataFrame({"a": [v], "b": [1 - v]}) for v in np.linspace(0, 1, 300)]
    reports = pd.concat([randomize(r, design=design) for r in rows], ignore_index=True)
    reports.attrs = {"dpmic_ldp": design}
    result = pairwise(reports, replicates=20)
    assert result.n == 300 and result.privacy.bins == design["bins"]
    with pytest.raises(InvalidParameterError):
        randomize(rows[0], 1.0, design=design)


def test_storage_keeps_the_design_and_refuses_files_without_one(tmp_path):
    from dpmic_dask.ldp import read_design, read_reports, write_reports

    df = pd.DataFrame({"a": np.linspace(0, 1, 500), "b": np.linspace(1, 0, 500)})
    reports = randomize(df, 1.0, bounds={"a": (0, 1), "b": (0, 1)})
    write_reports(reports, tmp_path / "r.parquet")
    assert read_design(tmp_path / "r.parquet") == reports.attrs["dpmic_ldp"]
    back = read_reports(tmp_path / "r.parquet")
    pd.testing.assert_frame_equal(back, reports)
    reports.to_parquet(tmp_path / "bare.parquet")  # pandas keeps attrs only its own way
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "bare.parquet").replace_schema_metadata({})
    pq.write_table(table, tmp_path / "bare.parquet")
    with pytest.raises(InvalidParameterError):
        read_design(tmp_path / "bare.parquet")
    plain = pd.DataFrame(reports)
    plain.attrs = {}
    with pytest.raises(InvalidParameterError):
        pairwise(plain)


def test_a_tampered_design_is_refused():
    df = pd.DataFrame({"a": np.linspace(0, 1, 50), "b": np.linspace(1, 0, 50)})
    reports = randomize(df, 1.0, bounds={"a": (0, 1), "b": (0, 1)}, protocol="grr")
    design = dict(reports.attrs["dpmic_ldp"])
    design["epsilon"] = 0.5  # the protocol's parameters were made for eps = 1
    with pytest.raises(InvalidParameterError):
        pairwise(reports, design=design)


def test_reports_of_wide_words_held_as_floats_are_refused():
    """OUE words past 53 cells do not fit a float exactly: a bits column cast to
    float64 (a CSV round trip) was accepted and 45% of reports read other bits,
    moving the estimate without a word."""
    gen = np.random.default_rng(0)  # test data only
    x = gen.uniform(0, 1, 4000)
    frame = pd.DataFrame({"x": x, "y": x + gen.normal(0, 0.1, x.size)})
    reports = randomize(frame, 2.0, bounds={"x": (0, 1), "y": (-0.5, 1.5)}, protocol="oue",
                        bins=8)
    design = reports.attrs["dpmic_ldp"]
    floats = reports.assign(bits0=reports["bits0"].astype(np.float64))
    assert (floats["bits0"].to_numpy() > 2.0 ** 53).any()  # the case: words this wide
    with pytest.raises(InvalidDataError, match="held as floats"):
        pairwise(floats, design=design)
    narrow = reports.assign(pair=reports["pair"].astype(np.float64))  # small words: exact
    assert pairwise(narrow, design=design).to_pandas().mic.tolist() == \
        pairwise(reports).to_pandas().mic.tolist()


@pytest.mark.parametrize("eps", [1e-6, 1e-4])
def test_an_estimate_the_randomization_swamps_spans_the_whole_range(eps):
    """At eps = 1e-6 every bootstrap table projected onto one cell: MIC 0 with a
    ci95 of 0 (certainty around a guess; the grid's exact MICr is 0.38). The ci95
    spans [0, 1] and a NoiseWarning says so; at a useful eps it is narrow."""
    from dpmic_dask.errors import NoiseWarning

    gen = np.random.default_rng(2)  # test data only
    x = gen.uniform(0, 1, 20_000)
    frame = pd.DataFrame({"x": x, "y": x + gen.normal(0, 0.05, x.size)})
    bounds = {"x": (0, 1), "y": (-0.5, 1.5)}
    with pytest.warns(NoiseWarning, match="swamped by the reports' randomization"):
        swamped = pairwise(randomize(frame, eps, bounds=bounds, bins=3)).to_pandas()
    assert swamped.ci95.iloc[0] >= 1.0
    useful = pairwise(randomize(frame, 4.0, bounds=bounds, bins=3)).to_pandas()
    assert useful.ci95.iloc[0] < 0.5


def test_the_collinear_sums_are_the_same_in_blocks_and_by_brute_force(monkeypatch):
    """The OLH covariance's sums over the lines of GF(g)^w: built at once they
    needed k^2 (g - 2) w int64 (5 GB for 1,024 cells and g = 331, a raw
    ArrayMemoryError after the people had spent their eps); in blocks of rows now,
    the same numbers as a brute-force enumeration of every line."""
    from dpmic_dask.ldp import protocols

    gen = np.random.default_rng(2)  # test data only
    for g, w, k in ((3, 2, 9), (5, 2, 16), (7, 2, 40)):
        fe = np.concatenate([gen.random(k), [0.0]])
        digits = value_digits(np.arange(k), g, w)
        where = {tuple(d): v for v, d in enumerate(digits)}
        brute = np.zeros((k, k))
        for c in range(k):
            for other in range(k):
                if other != c:
                    brute[c, other] = sum(
                        fe[where.get(tuple((digits[c] + lam * (digits[other] - digits[c])) % g),
                                     k)] for lam in range(2, g))
        whole = protocols.collinear_sums(g, w, k, fe)
        monkeypatch.setattr(protocols, "COLLINEAR_BLOCK", 7)  # a few rows at a time
        blocked = protocols.collinear_sums(g, w, k, fe)
        monkeypatch.undo()
        np.testing.assert_allclose(whole, brute, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(blocked, whole)
