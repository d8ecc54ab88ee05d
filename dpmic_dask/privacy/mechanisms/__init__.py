"""Mechanisms as objects, and the registry of public release names.

A public release name (``micr-lap``) pairs a statistic with a noise mechanism;
``auto`` resolves to one of them from ``delta`` only (the budget's measure). Adding a
mechanism is one module here (a :class:`Mechanism` subclass), one
:func:`register` call below and its tests (the registry itself is
:mod:`dpmic_dask.privacy.mechanisms.registry`).

=============  ===========  ===========================  ====================
name           statistic    noise                        guarantee
=============  ===========  ===========================  ====================
``micr-lap``   ``micr``     Laplace on the value         ``eps``-DP
``micr-gauss`` ``micr``     Gaussian on the value        ``rho``-zCDP
``mice-lap``   ``mice``     Laplace on the value         ``eps``-DP
``micr-geom``  ``micr``     geometric on every count     ``eps``-DP
=============  ===========  ===========================  ====================
"""

from __future__ import annotations

import warnings

from dpmic_dask.privacy.costs import PURE_DP, ZCDP
from dpmic_dask.privacy.mechanisms.base import (
    GAUSS_CI95,
    LAPLACE_CI95,
    LATTICE,
    MAX_NOISE_UNITS,
    Mechanism,
    NoisePlan,
    noisy_counts,
    noisy_values,
)
from dpmic_dask.privacy.mechanisms.gaussian import GaussianMechanism
from dpmic_dask.privacy.mechanisms.geometric import GeometricCountsMechanism
from dpmic_dask.privacy.mechanisms.laplace import LaplaceMechanism
from dpmic_dask.privacy.mechanisms.registry import (
    _RELEASES,
    build_mechanism,
    check_mechanism,
    check_statistics,
    default_parameters,
    mechanism_names,
    mechanism_supports,
    plan_noise,
    register,
    register_value_mechanism,
    resolve_mechanism,
    split_mechanism,
    value_mechanism,
)

register("micr-lap", "micr", LaplaceMechanism)
register("micr-gauss", "micr", GaussianMechanism)
register("mice-lap", "mice", LaplaceMechanism)
register("micr-geom", "micr", GeometricCountsMechanism)
register_value_mechanism(PURE_DP, LaplaceMechanism)
register_value_mechanism(ZCDP, GaussianMechanism)

__all__ = [
    "GAUSS_CI95", "LAPLACE_CI95", "LATTICE", "MAX_NOISE_UNITS", "GaussianMechanism",
    "GeometricCountsMechanism", "LaplaceMechanism", "Mechanism", "NoisePlan", "_RELEASES",
    "build_mechanism", "check_mechanism", "check_statistics", "default_parameters",
    "mechanism_names", "mechanism_supports", "split_mechanism",
    "noisy_counts", "noisy_values", "plan_noise", "register", "register_value_mechanism",
    "resolve_mechanism", "value_mechanism",
]


def __getattr__(name: str):
    """``plan_release``: the older name of :func:`plan_noise` (renamed so that it is
    not mistaken for :func:`dpmic_dask.release.plan.plan_release`); it warns."""
    if name == "plan_release":
        warnings.warn("dpmic_dask.privacy.mechanisms.plan_release is deprecated; use plan_noise",
                      FutureWarning, stacklevel=2)
        return plan_noise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
