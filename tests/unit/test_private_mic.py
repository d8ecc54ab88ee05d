import numpy as np
import pytest

import dpmic_dask as dm
from dpmic_dask.privacy import noise
from dpmic_dask.privacy.accounting import Budget, InMemoryLedger
from dpmic_dask.privacy.mechanisms import default_parameters
from dpmic_dask.testing import ENV_FLAG, seeded_noise

BOUNDS = dict(x_bounds=(0, 1), y_bounds=(-1.5, 1.5))


@pytest.fixture
def data():
    gen = np.random.default_rng(3)  # test data only
    x = gen.random(3000)
    return x, np.sin(6 * x) + 0.2 * gen.normal(size=3000)


class ExplodingArray:
    """Data that fails the moment anything reads it."""

    def __array__(self, *args, **kwargs):
        raise AssertionError("data was read before the data-independent checks")

    def __len__(self):
        raise AssertionError("data was read before the data-independent checks")


@pytest.mark.parametrize("kw,match", [
    (dict(eps=0), "eps"), (dict(eps=float("nan")), "eps"), (dict(delta=2), "delta"),
    (dict(mechanism="best"), "mechanism"), (dict(x_bounds=(1, 0)), "x_bounds"),
    (dict(B=2), "B must"), (dict(c=0), "c must"), (dict(mechanism="micr-gauss"), "delta > 0"),
])
def test_parameter_errors_come_before_reading_data(kw, match):
    args = dict(eps=1.0, **BOUNDS)
    args.update(kw)
    with pytest.raises(dm.InvalidParameterError, match=match):
        dm.private_mic(ExplodingArray(), ExplodingArray(), **args)


def test_release_fields(data):
    x, y = data
    ledger = InMemoryLedger(uncapped=True)
    r = dm.private_mic(x, y, eps=1.0, ledger=ledger, dataset="t", **BOUNDS)
    assert r.mechanism == "micr-lap" and r.n == 3000
    assert (r.B, r.c) == default_parameters("micr-lap", 3000, 1.0) == (115, 5)
    exact = dm.micr(x, y, B=r.B, c=r.c, **BOUNDS)
    assert abs(r.value - exact) < 20 * r.noise_scale  # noise ~0.005: the value is MICr's
    assert r.epsilon == 1.0 and r.delta == 0.0 and r.rho is None and not r.seeded
    assert r.noise_scale == pytest.approx(r.sensitivity, rel=1e-9)
    assert r.ci95 == pytest.approx(r.noise_scale * np.log(20))
    assert [c.charge_id for c in ledger.charges("t")] == [r.charge_id]
    text = r.report()
    assert "1-differentially private" in text and "at most 1 nat of" in text and "NOT PRIVATE" not in text


@pytest.mark.parametrize("mechanism,delta", [("micr-gauss", 1e-6), ("mice-lap", 0.0), ("micr-geom", 0.0)])
def test_other_mechanisms(data, mechanism, delta):
    x, y = data
    r = dm.private_mic(x, y, eps=2.0, delta=delta, mechanism=mechanism, **BOUNDS)
    assert r.mechanism == mechanism
    if mechanism == "mice-lap":
        assert abs(r.value - dm.mice(x, y)) < 20 * r.noise_scale
    elif mechanism == "micr-gauss":
        assert abs(r.value - dm.micr(x, y, B=r.B, c=r.c, **BOUNDS)) < 20 * r.noise_scale
    text = r.report()
    assert text.startswith(f"MIC estimate: {r.value:.4f} ({mechanism}, n=3000")
    assert r.charge_id in text


def test_each_call_charges_once_and_draws_fresh_noise(data):
    x, y = data
    ledger = InMemoryLedger(uncapped=True)
    values = {dm.private_mic(x, y, eps=0.05, ledger=ledger, dataset="d", **BOUNDS).value for _ in range(5)}
    assert len(ledger.charges("d")) == 5
    assert len(values) > 1  # secure noise differs from call to call


def test_refused_release_draws_no_noise(data, monkeypatch):
    x, y = data
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(0.5))

    def no_noise():
        raise AssertionError("noise drawn for a refused release")

    monkeypatch.setattr(noise, "active_sampler", no_noise)
    monkeypatch.setattr("dpmic_dask.privacy.noise.active_sampler", no_noise)
    with pytest.raises(dm.BudgetExceededError):
        dm.private_mic(x, y, eps=1.0, ledger=ledger, dataset="d", **BOUNDS)
    assert ledger.charges("d") == []


def test_bad_data_errors(data):
    x, y = data
    with pytest.raises(dm.InvalidDataError, match="at least 6 rows"):
        dm.private_mic(x[:5], y[:5], eps=1.0, mechanism="mice-lap", **BOUNDS)
    bad = x.copy()
    bad[7] = np.nan
    with pytest.raises(dm.MissingValuesError):
        dm.private_mic(bad, y, eps=1.0, **BOUNDS)


def test_seeded_noise_is_guarded(data, monkeypatch):
    x, y = data
    monkeypatch.delenv(ENV_FLAG, raising=False)
    with pytest.raises(dm.InvalidParameterError, match="not_private=True"):
        with seeded_noise(1):
            pass
    with pytest.raises(dm.InvalidParameterError, match=ENV_FLAG):
        with seeded_noise(1, not_private=True):
            pass
    monkeypatch.setenv(ENV_FLAG, "1")
    with pytest.warns(dm.PrivacyLeakWarning):
        with seeded_noise(1, not_private=True):
            a = dm.private_mic(x, y, eps=0.05, **BOUNDS)
    with pytest.warns(dm.PrivacyLeakWarning):
        with seeded_noise(1, not_private=True):
            b = dm.private_mic(x, y, eps=0.05, **BOUNDS)
    assert a.value == b.value and a.seeded and "NOT PRIVATE" in a.report()
    assert not dm.private_mic(x, y, eps=0.05, **BOUNDS).seeded


def test_budget_precheck_matches_the_resolved_mechanism(data):
    x, y = data
    ledger = InMemoryLedger()
    ledger.set_budget("pure", Budget(1.0))
    # delta > 0 accounts in zCDP (auto: Gaussian), which a pure budget cannot pay:
    # refused before the data are read, whether asked for by name or by auto
    for mechanism in ("auto", "micr-gauss"):
        with pytest.raises(dm.BudgetMismatchError, match="approximate-DP"):
            dm.private_mic(ExplodingArray(), ExplodingArray(), eps=0.1, delta=1e-6,
                           mechanism=mechanism, ledger=ledger, dataset="pure", **BOUNDS)
    r = dm.private_mic(x, y, eps=0.5, ledger=ledger, dataset="pure", **BOUNDS)
    assert r.mechanism == "micr-lap" and r.rho is None
    with pytest.raises(dm.BudgetExceededError, match="no data was read"):
        dm.private_mic(ExplodingArray(), ExplodingArray(), eps=0.6, ledger=ledger,
                       dataset="pure", **BOUNDS)
