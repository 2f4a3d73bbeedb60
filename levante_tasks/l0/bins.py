"""Trace-length bins: L0-Bench's automatic thresholds, or explicit inclusive ranges from the config."""

from __future__ import annotations

from collections.abc import Sequence


def auto_thresholds(lengths: Sequence[int], num_bins: int) -> list[float]:
    """`num_bins - 1` thresholds evenly spaced from 1.5 x the shortest to 0.8 x the longest trace (L0-Bench).

    No thresholds when that span is empty (tiny pools): every trace then falls in bin 1, as upstream.
    """
    if num_bins < 2 or not lengths:
        return []
    low, high = 1.5 * min(lengths), 0.8 * max(lengths)
    if high <= low:
        return []
    step = (high - low) / (num_bins - 1)
    return [low + j * step for j in range(num_bins - 1)]


def threshold_bin(length: int, thresholds: Sequence[float]) -> int:
    """Bin 1.. of a length: 1 + the number of thresholds strictly below it (numpy.digitize, right=True, + 1)."""
    return 1 + sum(1 for t in thresholds if t < length)


def range_bin(length: int, ranges: Sequence[tuple[int, int]]) -> int | None:
    """Bin 1.. whose inclusive range holds `length`, or None when no range does."""
    for number, (low, high) in enumerate(ranges, start=1):
        if low <= length <= high:
            return number
    return None
