"""Across-document metrics: majority vote over k voters and the unbiased pass@k (Chen et al. 2021).

Each document returns a vote record `{item_id, voter, key, correct, steps, total}` (see `vote_record`).
Majority@k: the records of voters 0..k-1 of a program vote by `key`; the key with most votes wins, a tie goes to
the key whose first vote comes from the lowest voter id; the winner scores as the lowest-id voter holding it.
Programs missing any of those k voters are skipped (as in L0-Bench). pass@k uses all n voters of a program with
c correct: 1 - C(n-c, k) / C(n, k); programs with n < k are skipped. Means are over programs; NaN if none.
Records of profile upstream are aggregated by L0-Bench's rules instead (`upstream_aggregate`).
Beside the metrics, each bin reports how many programs it has and how many its single-attempt metrics drop
(`program_counts`; profile upstream drops a program when any voter's answer is empty); `too_few` says when a
bin's number rests on too few programs.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from levante_tasks.l0 import upstream_aggregate
from levante_tasks.l0.scoring import Score

# A bin's number rests on too few programs when fewer than MIN_SCORED_PROGRAMS are scored (below 30 the 95%
# interval of an accuracy can be wider than +-0.18: 1.96 * 0.5 / sqrt(30)) or when more than 1 - MIN_SCORED_SHARE
# of its programs were dropped (dropped programs are not a random sample: a voter answered nothing, typically
# on the longest traces, so the programs left are an easier selection than the bin).
MIN_SCORED_PROGRAMS = 30
MIN_SCORED_SHARE = 0.9


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def vote_record(item_id: str, voter: int, score: Score, profile: str = "default") -> dict[str, Any]:
    """The per-document record the aggregations read (the key is a short hash of the vote string).

    Profile default votes on the compared form of the lines; profile upstream on the exact cleaned response
    (L0-Bench), and records whether the response was empty and how the cleaned response scores when it wins.
    """
    record = {"item_id": item_id, "voter": voter, "key": _short_hash(score.vote_key), "correct": int(score.correct),
              "steps": score.steps, "total": score.total, "profile": profile}
    if profile == "upstream":
        record.update(key=_short_hash(score.cleaned), empty=score.empty, vote_correct=int(score.cleaned_correct),
                      vote_steps=score.cleaned_steps)
    return record


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n attempts with c correct: 1 - C(n-c, k) / C(n, k) (1.0 when n - c < k)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def by_item(records: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Records grouped by program, each group sorted by voter id (a repeated voter keeps its first record)."""
    groups: dict[str, dict[int, Mapping[str, Any]]] = {}
    for record in records:
        groups.setdefault(record["item_id"], {}).setdefault(int(record["voter"]), record)
    return {item: [voters[v] for v in sorted(voters)] for item, voters in groups.items()}


def majority(records: Sequence[Mapping[str, Any]], k: int) -> Mapping[str, Any] | None:
    """The winning record among voters 0..k-1 of one program (records sorted by voter), or None if any is missing."""
    voters = [r for r in records if int(r["voter"]) < k]
    return upstream_aggregate.plurality(voters) if len(voters) == k else None


def _is_upstream(records: Sequence[Mapping[str, Any]]) -> bool:
    return bool(records) and records[0].get("profile") == "upstream"


def single_accuracy(records: Sequence[Mapping[str, Any]]) -> float:
    """Whole-trace accuracy of single attempts, averaged over programs and voters."""
    if _is_upstream(records):
        return upstream_aggregate.single(records, "correct")
    return upstream_aggregate.mean([float(r["correct"]) for r in records])


def single_steps(records: Sequence[Mapping[str, Any]]) -> float:
    """Steps to first error of single attempts, averaged over programs and voters."""
    if _is_upstream(records):
        return upstream_aggregate.single(records, "steps")
    return upstream_aggregate.mean([float(r["steps"]) for r in records])


def majority_accuracy(records: Sequence[Mapping[str, Any]], k: int) -> float:
    """Share of programs whose majority@k answer is a correct trace."""
    if _is_upstream(records):
        return upstream_aggregate.majority(records, k, "vote_correct")
    winners = [majority(group, k) for group in by_item(records).values()]
    return upstream_aggregate.mean([float(w["correct"]) for w in winners if w is not None])


def majority_steps(records: Sequence[Mapping[str, Any]], k: int) -> float:
    """Mean steps to first error of the majority@k answers."""
    if _is_upstream(records):
        return upstream_aggregate.majority(records, k, "vote_steps")
    winners = [majority(group, k) for group in by_item(records).values()]
    return upstream_aggregate.mean([float(w["steps"]) for w in winners if w is not None])


def mean_pass_at_k(records: Sequence[Mapping[str, Any]], k: int) -> float:
    """pass@k averaged over programs with at least k voters."""
    if _is_upstream(records):
        return upstream_aggregate.mean_pass_at_k(records, k)
    groups = [g for g in by_item(records).values() if len(g) >= k]
    return upstream_aggregate.mean([pass_at_k(len(g), sum(int(r["correct"]) for r in g), k) for g in groups])


def program_counts(records: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """(programs with any record, programs the single-attempt metrics score): profile upstream scores only the
    programs with a logged answer from every voter; the default profile scores every program."""
    programs = len({r["item_id"] for r in records})
    if _is_upstream(records):
        return programs, len(upstream_aggregate.complete_items(records)[1])
    return programs, programs


def too_few(programs: int, scored: int) -> bool:
    """Whether a bin's number rests on too few programs (thresholds and why: MIN_SCORED_PROGRAMS above)."""
    return scored < MIN_SCORED_PROGRAMS or scored < MIN_SCORED_SHARE * programs


# lmms-eval aggregations (a YAML names a one-argument callable); add a k by adding three lines.
def trace_acc(records: list[Mapping[str, Any]]) -> float:
    """Single-attempt whole-trace accuracy."""
    return single_accuracy(records)


def steps(records: list[Mapping[str, Any]]) -> float:
    """Single-attempt steps to first error."""
    return single_steps(records)


def maj_at_5_acc(records: list[Mapping[str, Any]]) -> float:
    """Majority@5 whole-trace accuracy."""
    return majority_accuracy(records, 5)


def maj_at_5_steps(records: list[Mapping[str, Any]]) -> float:
    """Majority@5 steps to first error."""
    return majority_steps(records, 5)


def pass_at_5(records: list[Mapping[str, Any]]) -> float:
    """Mean unbiased pass@5."""
    return mean_pass_at_k(records, 5)


def maj_at_15_acc(records: list[Mapping[str, Any]]) -> float:
    """Majority@15 whole-trace accuracy."""
    return majority_accuracy(records, 15)


def maj_at_15_steps(records: list[Mapping[str, Any]]) -> float:
    """Majority@15 steps to first error."""
    return majority_steps(records, 15)


def pass_at_15(records: list[Mapping[str, Any]]) -> float:
    """Mean unbiased pass@15."""
    return mean_pass_at_k(records, 15)


def maj_at_31_acc(records: list[Mapping[str, Any]]) -> float:
    """Majority@31 whole-trace accuracy."""
    return majority_accuracy(records, 31)


def maj_at_31_steps(records: list[Mapping[str, Any]]) -> float:
    """Majority@31 steps to first error."""
    return majority_steps(records, 31)


def pass_at_31(records: list[Mapping[str, Any]]) -> float:
    """Mean unbiased pass@31."""
    return mean_pass_at_k(records, 31)


def programs(records: list[Mapping[str, Any]]) -> int:
    """Programs of the bin (any record)."""
    return program_counts(records)[0]


def programs_dropped(records: list[Mapping[str, Any]]) -> int:
    """Programs the single-attempt metrics leave out (profile upstream: a voter's answer was empty)."""
    count, scored = program_counts(records)
    return count - scored


def total(values: list[float]) -> int:
    """Sum of per-document 0/1 flags: how many documents had the property (parse failures)."""
    return int(sum(values))
