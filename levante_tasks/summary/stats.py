"""The statistics of the summary matrix: intervals over items, spread over seeds, lmms-eval's stderrs.

- Accuracy over items: Wilson score interval at 95% (z = 1.959964), exact for 0 and n correct (no clipping).
- Over items answered under k replicates (seeds re-ask the same items): `item_interval`, the Wilson interval
  with Kish's effective sample size for responses clustered in items (docs/summary.md has the formula); with
  one replicate it is the plain Wilson interval over the items, and more seeds of the same items do not
  narrow it by sqrt(k).
- Over seeds (replicates): mean, sample SD (ddof = 1) and the t-based 95% CI radius t(0.975, n - 1) * sd / sqrt(n);
  SD and radius are None for one seed. (The normal 1.96 * sd / sqrt(n) is too narrow for 2-3 seeds: the
  t quantile, 12.71 or 4.30, is the honest one.)
- `mean_stderr`, `clt_stderr`, `pooled_sample_stderr`: the formulas lmms-eval 0.7.x reports, for `verify`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Z95 = 1.959963984540054  # standard normal 0.975 quantile


def wilson_interval(correct: int, n: int, z: float = Z95) -> tuple[float | None, float | None]:
    """Wilson score interval for `correct` successes out of `n`; (None, None) when n = 0."""
    if n <= 0:
        return None, None
    return wilson_bounds(correct / n, n, z)


def wilson_bounds(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion `p` over a (possibly effective, non-integer) sample size `n` > 0."""
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low, high = centre - half, centre + half
    return (0.0 if p <= 0 else low), (1.0 if p >= 1 else high)


def item_interval(item_means: Sequence[float], responses: int, z: float = Z95) -> tuple[float | None, float | None]:
    """95% interval of the mean over items of per-item accuracies (each the mean over the item's replicates).

    p = mean of the item means; V = sum((m_i - p)^2) / n^2 (the between-item variance of p, responses clustered
    in items); n_eff = p(1 - p) / V, at most `responses`, = n when p is 0 or 1; Wilson at n_eff.
    """
    n = len(item_means)
    if n == 0:
        return None, None
    p = sum(item_means) / n
    variance = sum((m - p) ** 2 for m in item_means) / (n * n)
    if p <= 0 or p >= 1:
        n_eff = float(n)
    else:
        n_eff = min(p * (1 - p) / variance, float(responses)) if variance > 0 else float(responses)
    return wilson_bounds(p, n_eff, z)


# t(0.975, df) for df = 1..30 exactly as scipy.special.stdtrit gives them (a test compares every one): the usual
# seed counts need no scipy import (~0.2 s of CPU in every summarize)
T_975 = (12.706204736174694, 4.302652729749462, 3.1824463052837078, 2.7764451051977934, 2.5705818356363146,
         2.4469118511449786, 2.364624251592784, 2.306004135204166, 2.262157162798205, 2.228138851986274,
         2.200985160091639, 2.1788128296672284, 2.1603686564627913, 2.144786687917804, 2.131449545559776,
         2.1199052992212546, 2.1098155778333156, 2.1009220402410382, 2.0930240544083087, 2.085963447265864,
         2.0796138447276795, 2.0738730679040254, 2.0686576104190486, 2.0638985616280245, 2.0595385527532972,
         2.0555294386428735, 2.0518305164802846, 2.0484071417952454, 2.045229642132703, 2.0422724563012378)


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with `df` >= 1 degrees of freedom (the seed spread's CI radius)."""
    if 1 <= df <= len(T_975):
        return T_975[df - 1]
    return t_quantile_975_scipy(df)


def t_quantile_975_scipy(df: int) -> float:
    """t(0.975, df) from scipy.special.stdtrit (what scipy.stats.t.ppf evaluates; scipy.stats would add ~0.6 s of
    import)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.975))


def seed_summary(values: Sequence[float]) -> dict[str, float | int | None]:
    """`{"n", "mean", "sd", "ci95_radius"}` of per-seed accuracies (sd: ddof = 1; t-based radius)."""
    n = len(values)
    mean = sum(values) / n if n else None
    if n < 2 or mean is None:
        return {"n": n, "mean": mean, "sd": None, "ci95_radius": None}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return {"n": n, "mean": mean, "sd": sd, "ci95_radius": t_quantile_975(n - 1) * sd / math.sqrt(n)}


def mean_stderr(values: Sequence[float]) -> float | None:
    """lmms-eval's `<metric>_stderr` for a mean: sample SD / sqrt(n); None ("N/A") for fewer than 2 values."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    return math.sqrt(sum([(v - mean) ** 2 for v in values]) / (n - 1)) / math.sqrt(n)  # a list sums faster


clt_stderr = mean_stderr  # `<metric>_stderr_clt`: numpy std(ddof=1) / sqrt(n), the same number


def pooled_sample_stderr(stderrs: Sequence[float], sizes: Sequence[int]) -> float:
    """lmms-eval's group stderr when subtasks are weighted by size (pooled variance)."""
    pooled_var = sum((size - 1) * se**2 * size for size, se in zip(sizes, stderrs, strict=True))
    return math.sqrt(pooled_var / (sum(sizes) - len(sizes)) / sum(sizes))
