"""The estimator contract, in scikit-learn's manner, shared by every schedcast model.

Why a base class of our own rather than ``sklearn.base.BaseEstimator``: schedcast's estimators take
DataFrames (forecasters take a demand frame and optional attributes), and importing scikit-learn costs
about half a second that a heuristic replay must not pay. The contract is the same:

- ``__init__`` stores each parameter under its own name and does nothing else (no validation that
  depends on data, no fitting); ``get_params`` reads them back from the signature;
- ``set_params`` changes them by name (an unknown name is refused, listing the valid ones);
- what ``fit`` learns ends in ``_``; ``fit`` returns ``self``; ``predict`` before ``fit`` raises
  :class:`NotFittedError`;
- :func:`clone` gives an unfitted copy with the same parameters.

``tests/test_estimator_conformance.py`` checks every estimator of every task against it.
"""
from __future__ import annotations

import copy
import inspect
from typing import Any, TypeVar

E = TypeVar("E", bound="Estimator")


class NotFittedError(ValueError, AttributeError):
    """``predict`` (or another use of learned state) before ``fit``."""


class Estimator:
    """Parameters from ``__init__``'s signature; learned state in attributes ending in ``_``."""

    @classmethod
    def param_names(cls) -> list[str]:
        """The constructor's parameter names, in order (``*args`` / ``**kwargs`` are not allowed)."""
        init = cls.__init__
        if init is object.__init__:
            return []
        names = []
        for p in inspect.signature(init).parameters.values():
            if p.name == "self":
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"{cls.__name__}.__init__ takes *args/**kwargs: parameters must be named")
            names.append(p.name)
        return names

    def get_params(self, deep: bool = False) -> dict[str, Any]:
        """The constructor parameters as stored (``deep`` is accepted for scikit-learn compatibility)."""
        return {name: getattr(self, name) for name in self.param_names()}

    def set_params(self: E, **params: Any) -> E:
        valid = self.param_names()
        unknown = sorted(set(params) - set(valid))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no parameter {', '.join(map(repr, unknown))}; "
                             f"valid: {', '.join(valid)}")
        for name, value in params.items():
            setattr(self, name, value)
        return self

    def fitted_attributes(self) -> list[str]:
        return sorted(k for k in vars(self) if k.endswith("_") and not k.startswith("_"))

    def check_is_fitted(self) -> None:
        if not self.fitted_attributes():
            raise NotFittedError(f"{type(self).__name__} is not fitted: call fit first")

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()
                    if p.name != "self"}
        shown = []
        for name, value in self.get_params().items():
            default = defaults.get(name, inspect.Parameter.empty)
            try:
                same = value == default or (isinstance(value, tuple) and tuple(default) == value)
            except Exception:  # noqa: BLE001 - arrays and odd defaults: show the value
                same = False
            if not same:
                shown.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"


def clone(estimator: E) -> E:
    """An unfitted estimator of the same class with (deep copies of) the same parameters."""
    if not isinstance(estimator, Estimator):
        raise TypeError(f"cannot clone {type(estimator).__name__}: not a schedcast Estimator")
    return type(estimator)(**copy.deepcopy(estimator.get_params()))


def check_is_fitted(estimator: Any) -> None:
    if isinstance(estimator, Estimator):
        estimator.check_is_fitted()
    elif not any(k.endswith("_") and not k.startswith("_") for k in vars(estimator)):
        raise NotFittedError(f"{type(estimator).__name__} is not fitted: call fit first")
