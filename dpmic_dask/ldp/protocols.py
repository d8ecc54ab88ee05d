"""Pure LDP frequency protocols on a domain of ``k`` values (Wang et al. 2017).

A protocol turns a person's value ``v`` in ``[0, k)`` into a report; the report
*supports* a set of values, and a pure protocol has two numbers ``q > p`` with
``P(report supports v | value v) = q`` and ``P(report supports v' | value v) = p``
for every ``v' != v``. Summing the supports of ``n`` reports gives ``S``, and
``(S / n - p) / (q - p)`` estimates every frequency without bias.

Three protocols, each with its probabilities rounded to multiples of ``2**-32`` in
the direction that keeps the privacy ratio at most ``e^eps`` *exactly* for the
probabilities actually used (checked with integer arithmetic at construction and
exhaustively in the tests); the estimator uses those exact ``q`` and ``p``.

- ``grr`` (generalised randomized response): report the true value with
  probability ``K / 2**32 ~= e^eps / (e^eps + k - 1)``, else one of the other
  ``k - 1`` values uniformly. Ratio ``K (k - 1) / (2**32 - K) <= e^eps``.
- ``olh`` (optimised local hashing): the person draws a hash ``h_a`` uniformly
  from a universal family with ``g`` buckets and reports ``(a, GRR_g(h_a(v)))``.
  The family here is linear over the prime field ``GF(g)``: ``v`` is written in
  ``w`` base-``g`` digits and ``h_a(v) = sum_i a_i v_i mod g`` for uniform digits
  ``a``. For ``v != v'`` the digit vectors differ, so ``P_a(h_a(v) = h_a(v')) = 1/g``
  exactly, which makes the protocol pure with ``p = 1/g``. The ratio is that of
  ``GRR_g`` whatever the hash. ``g`` is the prime that minimises the variance.
- ``oue`` (optimised unary encoding): a ``k``-bit vector, the person's own bit
  set with probability ``1/2`` and every other bit with ``K / 2**32 ~= 1 / (e^eps + 1)``
  (rounded up). Ratio ``(2**32 - K) / K <= e^eps``. ``k`` bits per report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.ldp.bits import WORD, ByteSource

PROTOCOLS = ("grr", "olh", "oue")
#: relative margin that absorbs the rounding of ``exp`` in the privacy checks
_MARGIN = 1e-12


def _ratio_ok(num: int, den: int, eps: float) -> bool:
    """``num / den <= e^eps`` with a margin far larger than the float error of exp."""
    return num <= math.exp(eps) * den * (1.0 - _MARGIN)


def grr_keep(eps: float, k: int) -> int:
    """Numerator ``K`` of GRR's keep probability ``K / 2**32`` on ``k`` values: the
    largest with ``K (k - 1) / (2**32 - K) <= e^eps``."""
    e = math.exp(eps)
    K = min(WORD - 1, int(math.floor(WORD * e / (e + k - 1))))
    while K > 0 and not _ratio_ok(K * (k - 1), WORD - K, eps):
        K -= 1
    return K


def oue_other(eps: float) -> int:
    """Numerator ``K`` of OUE's probability ``K / 2**32`` that another bit is set:
    the smallest with ``(2**32 - K) / K <= e^eps``."""
    K = max(1, int(math.ceil(WORD / (math.exp(eps) + 1.0))))
    while not _ratio_ok(WORD - K, K, eps):
        K += 1
    return K


def _primes_upto(limit: int) -> list[int]:
    sieve = np.ones(limit + 1, dtype=bool)
    sieve[:2] = False
    for i in range(2, int(limit ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i::i] = False
    return [int(x) for x in np.flatnonzero(sieve)]


def _digits_needed(g: int, k: int) -> int:
    w = 1
    while g ** w < k:
        w += 1
    return w


@dataclass(frozen=True)
class Protocol:
    """One pure protocol on ``k`` values at ``eps`` (see the module docstring).

    ``keep`` is the numerator over ``2**32`` of GRR's (or OLH's inner GRR's) keep
    probability, or of OUE's other-bit probability; ``g`` and ``w`` are OLH's
    buckets and digits (0 otherwise).
    """

    name: str
    k: int
    eps: float
    keep: int
    g: int = 0
    w: int = 0

    # ------------------------------------------------------------ parameters
    @property
    def q(self) -> float:
        """P(report supports the person's own value)."""
        return 0.5 if self.name == "oue" else self.keep / WORD

    @property
    def p(self) -> float:
        """P(report supports any other given value)."""
        if self.name == "grr":
            return (1.0 - self.keep / WORD) / (self.k - 1)
        if self.name == "olh":
            return 1.0 / self.g
        return self.keep / WORD

    def variance_factor(self) -> float:
        """``n * Var(f_hat)`` for a value of frequency 0: ``p (1 - p) / (q - p)**2``."""
        p, q = self.p, self.q
        return p * (1 - p) / (q - p) ** 2

    def fields(self) -> tuple[str, ...]:
        """Names of the report's columns besides ``pair``."""
        if self.name == "grr":
            return ("y",)
        if self.name == "olh":
            return ("seed", "y")
        return tuple(f"bits{j}" for j in range((self.k + 63) // 64))

    def to_dict(self) -> dict:
        return {"name": self.name, "k": self.k, "eps": self.eps, "keep": self.keep,
                "g": self.g, "w": self.w}

    @classmethod
    def from_dict(cls, d: dict) -> Protocol:
        proto = cls(str(d["name"]), int(d["k"]), float(d["eps"]), int(d["keep"]),
                    int(d.get("g", 0)), int(d.get("w", 0)))
        proto.check()
        return proto

    def check(self) -> None:
        """Refuse parameters whose exact privacy ratio exceeds ``e^eps``."""
        if self.name not in PROTOCOLS or self.k < 2:
            raise InvalidParameterError("unknown LDP protocol in the report design")
        if self.name == "grr":
            ok = 0 < self.keep < WORD and _ratio_ok(self.keep * (self.k - 1), WORD - self.keep,
                                                    self.eps)
        elif self.name == "olh":
            ok = (self.g >= 2 and self.g ** self.w >= self.k and 0 < self.keep < WORD
                  and _ratio_ok(self.keep * (self.g - 1), WORD - self.keep, self.eps))
        else:
            ok = 0 < self.keep < WORD and _ratio_ok(WORD - self.keep, self.keep, self.eps)
        if not ok or not self.q > self.p:
            raise InvalidParameterError("the report design's protocol is not eps-LDP as stated")

    # ------------------------------------------------------------ client
    def encode(self, values: np.ndarray, source: ByteSource) -> dict[str, np.ndarray]:
        """Randomize ``values`` (int64 in ``[0, k)``), one report per value."""
        n = values.shape[0]
        if self.name == "grr":
            return {"y": _grr(values, self.k, self.keep, source).astype(np.int32)}
        if self.name == "olh":
            digits = source.below(self.g, n * self.w).reshape(n, self.w)
            hashed = (digits * value_digits(values, self.g, self.w)).sum(axis=1) % self.g
            seed = digits @ (self.g ** np.arange(self.w, dtype=np.int64))
            return {"seed": seed.astype(np.int64),
                    "y": _grr(hashed, self.g, self.keep, source).astype(np.int32)}
        bits = source.bernoulli(self.keep, n * self.k).reshape(n, self.k)
        bits[np.arange(n), values] = source.bernoulli(WORD // 2, n)
        return pack_bits(bits)

    # ------------------------------------------------------------ server
    def supports(self, reports: dict[str, np.ndarray], pair: np.ndarray,
                 n_pairs: int) -> np.ndarray:
        """Support counts int64[n_pairs, k]: how many of each pair's reports support
        each value (exact integers, summed over partitions by addition)."""
        k = self.k
        if self.name == "grr":
            y = np.asarray(reports["y"], dtype=np.int64)
            return np.bincount(pair * k + y, minlength=n_pairs * k).reshape(n_pairs, k)
        out = np.zeros((n_pairs, k), dtype=np.int64)
        if self.name == "oue":
            bits = unpack_bits({f: np.asarray(reports[f]) for f in self.fields()}, k)
            for j in range(n_pairs):
                out[j] = bits[pair == j].sum(axis=0, dtype=np.int64)
            return out
        g, w = self.g, self.w
        seed = np.asarray(reports["seed"], dtype=np.int64)
        y = np.asarray(reports["y"], dtype=np.int64)
        keys, counts = np.unique((pair * g ** w + seed) * g + y, return_counts=True)
        cells = value_digits(np.arange(k, dtype=np.int64), g, w)  # [k, w]
        step = max(1, (1 << 22) // k)
        for start in range(0, keys.size, step):
            key = keys[start:start + step]
            cnt = counts[start:start + step]
            yk = key % g
            rest = key // g
            a = value_digits(rest % g ** w, g, w)
            hit = ((a @ cells.T) % g) == yk[:, None]
            np.add.at(out, rest // g ** w, hit * cnt[:, None])
        return out

    def support_covariance(self, f: np.ndarray) -> np.ndarray:
        """Covariance float64[k, k] of one report's support indicators, averaged over
        people whose values have frequencies ``f`` (the normal approximation's second
        moment; ``n`` reports give ``n`` times this for the support counts)."""
        f = np.asarray(f, dtype=float)
        p, q = self.p, self.q
        m = p + (q - p) * f  # E[support of c]
        joint = np.zeros((self.k, self.k))
        if self.name == "oue":
            joint = p * p + p * (q - p) * (f[:, None] + f[None, :])
        elif self.name == "olh":
            g = self.g
            joint = (f[:, None] + f[None, :]) * q / g + (1 - f[:, None] - f[None, :]) / g ** 2
            if g > 2:
                fe = np.concatenate([f, [0.0]])  # index k: a point outside the domain
                joint += (q / g - 1.0 / g ** 2) * collinear_sums(g, self.w, self.k, fe)
        np.fill_diagonal(joint, m)
        second = p * p + p * (q - p) * (f[:, None] + f[None, :]) + (q - p) ** 2 * np.diag(f)
        return joint - second

    def frequency_covariance(self, f: np.ndarray, n: int) -> np.ndarray:
        """Covariance of the unbiased frequency estimates from ``n`` reports of people
        whose values have frequencies ``f``."""
        return self.support_covariance(f) / (n * (self.q - self.p) ** 2)

    def estimate(self, supports: np.ndarray, n: int) -> np.ndarray:
        """Unbiased frequency estimates ``(S / n - p) / (q - p)`` (may be negative)."""
        return (np.asarray(supports, dtype=float) / n - self.p) / (self.q - self.p)

    # ------------------------------------------------------------ exact (tests)
    def report_probability(self, value: int, report: dict) -> float:
        """Exact probability of one report given the person's value (tests)."""
        W = float(WORD)
        if self.name == "grr":
            keep = self.keep / W
            return keep if report["y"] == value else (1 - keep) / (self.k - 1)
        if self.name == "olh":
            a = value_digits(np.array([report["seed"]]), self.g, self.w)[0]
            h = int((a * value_digits(np.array([value]), self.g, self.w)[0]).sum() % self.g)
            keep = self.keep / W
            inner = keep if report["y"] == h else (1 - keep) / (self.g - 1)
            return inner / self.g ** self.w
        bits = report["bits"]
        other = self.keep / W
        prob = 1.0
        for j, b in enumerate(bits):
            pj = 0.5 if j == value else other
            prob *= pj if b else 1 - pj
        return prob


def _grr(values: np.ndarray, k: int, keep: int, source: ByteSource) -> np.ndarray:
    n = values.shape[0]
    kept = source.bernoulli(keep, n)
    other = source.below(k - 1, n)
    other = other + (other >= values)
    return np.where(kept, values, other)


def value_digits(values: np.ndarray, g: int, w: int) -> np.ndarray:
    """Base-``g`` digits int64[n, w] of ``values`` (least significant first)."""
    v = np.asarray(values, dtype=np.int64)
    return (v[:, None] // (g ** np.arange(w, dtype=np.int64))[None, :]) % g


#: Entries of the collinear index built at once (int64): a design of 1,024 cells
#: and ``g = 331`` needs 3.4e8 (5 GB with the points' digits); beyond this many its
#: rows are taken in blocks on each call instead of one cached index.
COLLINEAR_BLOCK = 2 ** 22


def collinear_sums(g: int, w: int, k: int, fe: np.ndarray) -> np.ndarray:
    """``[c, c']``: the sum of ``fe`` over the values on the affine line through
    ``c`` and ``c'`` in ``GF(g)^w`` other than them (``c + lambda (c' - c)``,
    ``lambda = 2 .. g-1``; ``fe[k]``, 0, where a point is not a value, and on the
    diagonal), float64[k, k]."""
    rows = max(1, COLLINEAR_BLOCK // max(1, k * (g - 2) * w))
    if rows >= k:
        return fe[_collinear_rows(g, w, k, 0, k)].sum(axis=2)
    out = np.empty((k, k))
    for start in range(0, k, rows):
        stop = min(k, start + rows)
        out[start:stop] = fe[_collinear_rows.__wrapped__(g, w, k, start, stop)].sum(axis=2)
    return out


@lru_cache(maxsize=16)
def _collinear_rows(g: int, w: int, k: int, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` of the collinear index ``[c, c', j]`` (the ``j``-th point
    of the line through ``c`` and ``c'`` other than them, or ``k`` where it is not
    a value; int64[stop - start, k, g - 2], read-only; small ones cached)."""
    d = value_digits(np.arange(k, dtype=np.int64), g, w)
    lam = np.arange(2, g, dtype=np.int64)
    block = d[start:stop]
    pts = (block[:, None, None, :] + lam[None, None, :, None]
           * (d[None, :, None, :] - block[:, None, None, :])) % g
    idx = pts @ (g ** np.arange(w, dtype=np.int64))
    idx[idx >= k] = k
    mine = np.arange(start, stop)
    idx[mine - start, mine, :] = k
    idx.setflags(write=False)
    return idx


def pack_bits(bits: np.ndarray) -> dict[str, np.ndarray]:
    """Bit matrix bool[n, k] as ``ceil(k / 64)`` uint64 columns ``bits0, bits1, ...``."""
    n, k = bits.shape
    words = (k + 63) // 64
    padded = np.zeros((n, words * 64), dtype=bool)
    padded[:, :k] = bits
    packed = np.packbits(padded, axis=1, bitorder="little").view("<u8")
    return {f"bits{j}": packed[:, j].copy() for j in range(words)}


def unpack_bits(columns: dict[str, np.ndarray], k: int) -> np.ndarray:
    """Inverse of :func:`pack_bits`: bool[n, k]."""
    words = [np.asarray(columns[f"bits{j}"], dtype="<u8") for j in range((k + 63) // 64)]
    stacked = np.ascontiguousarray(np.stack(words, axis=1)).view(np.uint8)
    return np.unpackbits(stacked, axis=1, bitorder="little")[:, :k].astype(bool)


def make_protocol(name: str, eps: float, k: int) -> Protocol:
    """The protocol ``name`` (``grr``, ``olh``, ``oue`` or ``auto``) on ``k`` values.

    ``auto`` takes GRR or OLH, whichever has the smaller variance (GRR exactly when
    ``k`` is below about ``3 e^eps + 2``); OUE matches OLH's variance at ``k`` bits per
    report and is only used when asked for.
    """
    if name not in PROTOCOLS + ("auto",):
        raise InvalidParameterError(f"protocol must be one of {PROTOCOLS + ('auto',)}")
    if name == "grr" or (name == "auto" and k <= 2):
        proto = Protocol("grr", k, eps, grr_keep(eps, k))
    elif name == "oue":
        proto = Protocol("oue", k, eps, oue_other(eps))
    else:
        best = None
        for g in _primes_upto(max(3, min(k, int(4 * math.exp(eps) + 8)))):
            cand = Protocol("olh", k, eps, grr_keep(eps, g), g, _digits_needed(g, k))
            if cand.q > cand.p and (best is None
                                    or cand.variance_factor() < best.variance_factor()):
                best = cand
        if best is None:
            raise InvalidParameterError("no OLH hash family fits this domain")
        proto = best
        if name == "auto":
            grr = Protocol("grr", k, eps, grr_keep(eps, k))
            if grr.variance_factor() <= proto.variance_factor():
                proto = grr
    proto.check()
    return proto
