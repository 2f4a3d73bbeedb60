"""L0-Bench's aggregation of vote records (profile upstream), rule for rule, so its summary numbers come out.

- Empty responses are never logged by L0-Bench: their records are left out first.
- The voters are those with at least one logged response; a program lacking a logged response from any of them
  is dropped from every metric (single attempt, majority, pass@k).
- Voters are ordered as L0-Bench's sorted folder names order them: voter_0, voter_1, voter_10, voter_11, ...,
  voter_2, ...; "the first k voters" of a majority vote are the first k in that order.
- Single attempt: accuracy is the mean over voters of each voter's mean over programs; steps the mean over
  programs of each program's mean over voters.
- Majority@k: the first k voters' cleaned responses vote by exact string; the most frequent wins, a tie going to
  the string seen first; the winner is scored again from its cleaned text. Computed only with more than one
  voter, and (as L0-Bench prints only k <= the number of voters) NaN when k exceeds it.
- pass@k: 1 - prod_{j=n-c+1..n} (1 - k/j), or 1 when n - c < k, averaged over programs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Record = Mapping[str, Any]


def voter_order(voter: int) -> str:
    """The sort key of a voter in L0-Bench: its folder name `voter_<id>` compared as a string."""
    return str(voter)


def complete_items(records: Sequence[Record]) -> tuple[int, list[list[Record]]]:
    """(number of voters, per program its logged records in voter order), programs lacking one left out."""
    logged = [r for r in records if not r["empty"]]
    voters = {int(r["voter"]) for r in logged}
    groups: dict[str, dict[int, Record]] = {}
    for record in logged:
        groups.setdefault(record["item_id"], {}).setdefault(int(record["voter"]), record)
    complete = [[group[v] for v in sorted(group, key=voter_order)] for group in groups.values()
                if len(group) == len(voters)]
    return len(voters), complete


def mean(values: Sequence[float]) -> float:
    """The mean, NaN for no values."""
    return sum(values) / len(values) if values else float("nan")


def single(records: Sequence[Record], field: str) -> float:
    """`correct`: mean over voters of the mean over programs; `steps`: mean over programs of the mean over
    voters (L0-Bench's two orders of averaging, equal up to rounding)."""
    voters, items = complete_items(records)
    if not items:
        return float("nan")
    if field == "correct":
        return mean([mean([float(group[j][field]) for group in items]) for j in range(voters)])
    return mean([mean([float(r[field]) for r in group]) for group in items])


def pass_at_k(n: int, c: int, k: int) -> float:
    """L0-Bench's product form of the unbiased pass@k."""
    if n - c < k:
        return 1.0
    product = 1.0
    for j in range(n - c + 1, n + 1):
        product *= 1.0 - k / j
    return 1.0 - product


def mean_pass_at_k(records: Sequence[Record], k: int) -> float:
    """pass@k over the complete programs (NaN when k exceeds the number of voters)."""
    voters, items = complete_items(records)
    if k > voters:
        return float("nan")
    return mean([pass_at_k(len(group), sum(int(r["correct"]) for r in group), k) for group in items])


def plurality(voters: Sequence[Record]) -> Record:
    """The record whose `key` most voters gave; a tie goes to the key voted first (both profiles' vote)."""
    counts: dict[str, int] = {}
    first: dict[str, Record] = {}
    for record in voters:
        counts[record["key"]] = counts.get(record["key"], 0) + 1
        first.setdefault(record["key"], record)
    best = max(counts.values())
    return first[next(key for key in counts if counts[key] == best)]


def winner(group: Sequence[Record], k: int) -> Record:
    """The record whose cleaned response wins the exact-string vote of the first k voters."""
    return plurality(group[:k])


def majority(records: Sequence[Record], k: int, field: str) -> float:
    """Mean `field` (`vote_correct` or `vote_steps`) of the majority@k winners (NaN as the module says)."""
    voters, items = complete_items(records)
    if voters < 2 or k > voters:
        return float("nan")
    return mean([float(winner(group, k)[field]) for group in items])
