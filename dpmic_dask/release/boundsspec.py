"""Private bounds, typed: :class:`PrivateBounds` is the spelling of ``"private"``
with its settings beside it, for one column (``bounds={"x": PrivateBounds(...),
"y": (0, 1)}``) or for every column (``bounds=PrivateBounds(coverage=0.95)``).

:func:`typed_bounds` turns it into what the planner reads -- ``"private"`` and the
per-column ``coverage``, ``domain`` and ``refine`` settings -- before anything
is read, refusing a setting given twice with different values. Every setting is
a public parameter; nothing here looks at data.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.boundschecks import check_coverage, check_domain

#: The string spelling of private bounds.
PRIVATE = "private"

#: Each setting's default (a :class:`PrivateBounds` field, and the call-level option).
DEFAULT_SETTINGS = {"coverage": 0.99, "domain": None, "refine": True}


def check_refine(refine) -> bool:
    """Whether a column's budget is split over two passes (the default) or spent
    on the first pass alone."""
    if not isinstance(refine, bool):
        raise InvalidParameterError("refine must be True or False")
    return refine


def _check_pair(domain) -> tuple | None:
    """A public ``(lo, hi)``: numbers are checked now; values in a column's own
    kind (dates, times) when the plan converts them to the column's axis."""
    if domain is None:
        return None
    if isinstance(domain, (str, bytes, Mapping)) or not hasattr(domain, "__len__") \
            or len(domain) != 2:
        raise InvalidParameterError("PrivateBounds domain must be (lo, hi) or None")
    lo, hi = domain
    if all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in (lo, hi)):
        return check_domain((lo, hi))
    return lo, hi


@dataclass(frozen=True)
class PrivateBounds:
    """Bounds estimated privately inside the release (or by
    :func:`dpmic_dask.private_bounds`), from the budget's ``bounds_share``.

    ``coverage``: the share of the column's values the bounds aim to contain, in
    (0, 1); ``domain``: a loose public ``(lo, hi)`` in the column's kind to grid
    instead of the whole float range, or ``None``; ``refine``: whether the
    column's budget is split over a first and a refining pass. A field left at
    its default takes the call's option of the same name (``coverage=``,
    ``domain=``, ``refine=``); a field set to another value overrides it for this
    column, and a call that sets both to different values is refused.
    ``PrivateBounds()`` is ``"private"``.

    >>> from dpmic_dask import PrivateBounds
    >>> PrivateBounds(coverage=0.95, domain=(0, 1e6))
    PrivateBounds(coverage=0.95, domain=(0.0, 1000000.0), refine=True)
    """

    coverage: float = 0.99
    domain: tuple | None = None
    refine: bool = True

    def __post_init__(self):
        object.__setattr__(self, "coverage", check_coverage(self.coverage))
        object.__setattr__(self, "domain", _check_pair(self.domain))
        check_refine(self.refine)

    def given(self) -> dict:
        """The fields set to something other than their defaults."""
        return {name: getattr(self, name) for name, default in DEFAULT_SETTINGS.items()
                if getattr(self, name) != default}


def _key(name: str, value):
    """A setting in a form two spellings of the same value compare equal in."""
    if name == "domain" and value is not None:
        try:
            return _check_pair(value)
        except InvalidParameterError:
            return value
    if name == "coverage" and isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return value


def _call_level(option, column) -> tuple[bool, object]:
    """Whether the call's option sets ``column``'s setting, and to what: a dict
    sets the columns it names (and all others with its key ``None``); one value
    sets every column when it is not the default."""
    if isinstance(option, Mapping):
        if column in option:
            return True, option[column]
        if None in option:
            return True, option[None]
        return False, None
    return True, option


def _refuse_twice(name: str, column, value, option) -> None:
    given, called = _call_level(option, column)
    if not given or (not isinstance(option, Mapping)
                     and _key(name, called) == _key(name, DEFAULT_SETTINGS[name])):
        return
    if _key(name, called) != _key(name, value):
        where = "every column" if column is None else f"column {column!r}"
        raise InvalidParameterError(
            f"{where}: {name} is given both in PrivateBounds and as {name}= with different "
            f"values; give it once")


def _with_column(name: str, option, column, value):
    """The call's option with ``column``'s setting replaced by ``value``."""
    if isinstance(option, Mapping):
        return {**option, column: value}
    if _key(name, option) == _key(name, DEFAULT_SETTINGS[name]):
        return {column: value}
    return {None: option, column: value}


def typed_bounds(bounds, settings: dict) -> tuple:
    """``(bounds, settings)`` with every :class:`PrivateBounds` as ``"private"`` and
    its fields in ``settings`` (``coverage``, ``domain``, ``refine``: one value, or
    a dict by column). Anything else passes unchanged, to the planner's checks."""
    settings = dict(settings)
    if isinstance(bounds, PrivateBounds):  # every column: the call's options, set once
        for name, value in bounds.given().items():
            option = settings[name]
            if isinstance(option, Mapping):
                for column in option:
                    _refuse_twice(name, column, value, {column: option[column]})
                settings[name] = {**option, None: value}
            else:
                _refuse_twice(name, None, value, option)
                settings[name] = value
        return PRIVATE, settings
    if not isinstance(bounds, Mapping) or not any(isinstance(b, PrivateBounds)
                                                  for b in bounds.values()):
        return bounds, settings
    out = dict(bounds)
    for column, spec in bounds.items():
        if not isinstance(spec, PrivateBounds):
            continue
        out[column] = PRIVATE
        for name, value in spec.given().items():
            _refuse_twice(name, column, value, settings[name])
            settings[name] = _with_column(name, settings[name], column, value)
    return out, settings


def column_settings(columns, settings: dict) -> tuple:
    """:func:`~dpmic_dask.private_bounds`' ``columns``: a list (returned as it is),
    or a dict ``{column: PrivateBounds(...) or "private"}`` whose settings join
    ``settings`` as for :func:`typed_bounds`."""
    if not isinstance(columns, Mapping):
        return columns, dict(settings)
    for column, spec in columns.items():
        if not isinstance(spec, PrivateBounds) and not (isinstance(spec, str)
                                                         and spec == PRIVATE):
            raise InvalidParameterError(
                f"columns[{column!r}] must be PrivateBounds(...) or \"private\" (every column "
                "named is estimated privately)")
    bounds, settings = typed_bounds(dict(columns), settings)
    return list(bounds), settings


__all__ = ["DEFAULT_SETTINGS", "PRIVATE", "PrivateBounds", "check_refine", "column_settings",
           "typed_bounds"]
