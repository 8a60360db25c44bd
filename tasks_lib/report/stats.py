"""The few statistics a benchmark report needs, in the standard library only.

Why these methods:

* **Mean reward with a 95% interval.** Terminal-Bench rewards are almost always 0 or 1, and a
  plain normal or t interval is wrong exactly where benchmark numbers live: at 0/10 or 10/10 it
  collapses to zero width, and it can leave [0, 1]. So for 0/1 rewards we use the **Wilson score
  interval**, which stays inside [0, 1] and is honest at the edges. For fractional rewards we use
  a **Student t interval** (clipped to [0, 1] when every reward lies there).
* **Attempts are not independent.** With several attempts per task, attempts of one task are
  correlated (an easy task passes every time), so treating 3 x 40 trials as 120 independent
  samples would make the interval too narrow. Both methods therefore take the task of each value
  and use the task-clustered variance: the t interval uses the cluster-robust standard error with
  ``tasks - 1`` degrees of freedom; the Wilson interval uses an effective sample size ``n / design
  effect``, kept between the number of tasks and the number of trials (when every reward is equal
  the data cannot show independence, so the effective size is the number of tasks). With one
  value per task both reduce to the textbook intervals.
* **pass@k** uses the unbiased estimator of Chen et al. (2021), ``1 - C(n-c, k) / C(n, k)`` per
  task, averaged over tasks. ``n`` counts **scored** attempts only (an invalid attempt is not a
  failure of the model), ``c`` the attempts with reward >= 1. A task with fewer than ``k`` scored
  attempts has no unbiased estimate; it is left out and counted, never padded with zeros.
* **Sign test** for paired job comparisons: the exact two-sided binomial test on tasks where one
  side did better, ties dropped (the McNemar exact test for 0/1 outcomes).

No bootstrap: results must be reproducible byte for byte when a report is re-rendered.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Estimate:
    """A mean with its interval. ``low``/``high`` are None when no interval can be computed."""

    mean: float
    low: float | None
    high: float | None
    n: int
    method: str


def is_binary(values: Sequence[float]) -> bool:
    return all(v in (0.0, 1.0) for v in values)


def mean_interval(values: Sequence[float], clusters: Sequence[Hashable] | None = None,
                  confidence: float = CONFIDENCE) -> Estimate | None:
    """Mean of ``values`` with a ``confidence`` interval; None for no values (no 0/0)."""
    n = len(values)
    if n == 0:
        return None
    if clusters is None:
        clusters = list(range(n))
    if len(clusters) != n:
        raise ValueError("one cluster label per value")
    mean = math.fsum(values) / n
    n_clusters = len(set(clusters))
    clustered = n_clusters < n
    if is_binary(values):
        n_eff = float(n)
        if clustered:
            var = _clustered_variance(values, clusters, mean)
            iid = mean * (1 - mean) / n
            n_eff = float(n_clusters) if var is None or iid == 0 else n * iid / var
            n_eff = min(max(n_eff, float(n_clusters)), float(n))
        low, high = wilson(mean, n_eff, confidence)
        method = "Wilson score" + (f", clustered by task (effective n {n_eff:.1f})" if clustered else "")
        return Estimate(mean, low, high, n, method)
    method = "Student t" + (", clustered by task" if clustered else "")
    var = _clustered_variance(values, clusters, mean)
    if var is None:
        return Estimate(mean, None, None, n, method + " (needs 2+ tasks)")
    half = t_quantile(0.5 + confidence / 2, n_clusters - 1) * math.sqrt(var)
    low, high = mean - half, mean + half
    if all(0.0 <= v <= 1.0 for v in values):
        low, high = max(low, 0.0), min(high, 1.0)
    return Estimate(mean, low, high, n, method)


def _clustered_variance(values: Sequence[float], clusters: Sequence[Hashable], mean: float) -> float | None:
    """Cluster-robust variance of the mean (CR1); equals s^2/n with one value per cluster."""
    sums: dict[Hashable, float] = {}
    for v, c in zip(values, clusters, strict=True):
        sums[c] = sums.get(c, 0.0) + (v - mean)
    g, n = len(sums), len(values)
    if g < 2:
        return None
    return g / (g - 1) * math.fsum(e * e for e in sums.values()) / (n * n)


def wilson(p: float, n: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval for a proportion ``p`` observed over ``n`` (possibly effective) trials."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    low = 0.0 if p <= 0 else max(0.0, centre - half)  # exact bounds at the edges, no rounding residue
    high = 1.0 if p >= 1 else min(1.0, centre + half)
    return low, high


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Plain Student t interval of the mean (e.g. of paired differences); None below 2 values."""
    n = len(values)
    if n < 2:
        return None
    mean = math.fsum(values) / n
    s2 = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    half = t_quantile(0.5 + confidence / 2, n - 1) * math.sqrt(s2 / n)
    return mean - half, mean + half


def t_quantile(p: float, df: int) -> float:
    """Quantile of Student's t (``0.5 < p < 1``) by bisection on its exact CDF."""
    lo, hi = 0.0, 1.0
    while _t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if _t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2


def _t_cdf(t: float, df: int) -> float:
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2, 0.5, x)
    return 1 - tail if t >= 0 else tail


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b) (continued fraction, Numerical Recipes 6.4)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    ln_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(ln_front) * _betacf(a, b, x) / a
    return 1 - math.exp(ln_front) * _betacf(b, a, 1 - x) / b


def _betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task with ``n`` scored attempts of which ``c`` passed (needs n >= k)."""
    if not 0 <= c <= n or k < 1 or n < k:
        raise ValueError(f"pass@{k} needs n >= k and 0 <= c <= n (n={n}, c={c})")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_pass_at_k(per_task: Sequence[tuple[int, int]], k: int) -> tuple[float | None, int, int]:
    """pass@k averaged over tasks given ``(scored, passed)`` per task.

    Returns ``(value, tasks used, tasks left out for having fewer than k scored attempts)``;
    the value is None when no task has k scored attempts.
    """
    used = [pass_at_k(n, c, k) for n, c in per_task if n >= k]
    short = sum(1 for n, _ in per_task if n < k)
    return (math.fsum(used) / len(used) if used else None), len(used), short


def sign_test(wins: int, losses: int) -> float | None:
    """Exact two-sided sign test p-value of ``wins`` vs ``losses`` (ties excluded); None if both 0."""
    n = wins + losses
    if n == 0:
        return None
    k = min(wins, losses)
    tail = math.fsum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)
