"""Scoring crafted responses, majority vote and pass@k, each checked against a hand computation."""

from __future__ import annotations

import math
import random

import pytest

from levante_tasks.l0 import aggregate
from levante_tasks.l0.scoring import score_response

TARGET = "L2,a:5\nL3,lst_x:[1,2]\nL4,\nL5,b:True\nL6,"  # 5 steps; L4 and L6 carry no value
EXACT = TARGET


@pytest.mark.parametrize(
    ("response", "steps", "parse_failed"),
    [
        (EXACT, 5, False),
        ("Here is the trace:\n```\n" + EXACT + "\n```\nDone.", 5, False),  # fences and chatter after the end
        ("```L2,a:5\nL3,lst_x:[1,2]\nL4,\nL5,b:True\nL6,\n```", 5, False),  # fence on the first line
        ("L2, a: 5\n\n  L3,lst_x:[1, 2]\nL4,\nL5,b:True\nL6,", 5, False),  # spaces and blank lines ignored
        ("L2,a:5\nL3,lst_x:[1,2]\nL4,x:9\nL5,b:True\nL6,", 5, False),  # value-less target: line number only
        ("<think>L2,a:9\nmaybe</think>\nL2,a:5\nL3,lst_x:[1,2]\nL4,\nL5,b:True\nL6,", 5, False),
        ("The answer is L2,a:5\nL3,lst_x:[1,2]\nL4,\nL5,b:True\nL6,", 5, False),  # starts at the first `L2,`
        ("L2,a:5\nL3,lst_x:[1,2]\nL4,\nL5,b:True", 4, False),  # last line missing: total - 1, not correct
        ("L2,a:5\nL3,lst_x:[1,2]\nL4,\nL5,b:true\nL6,", 3, False),  # case matters
        ("L2,a:5\nL3,lst_x:[1,2]\nL7,\nL5,b:True\nL6,", 2, False),  # wrong line number on a value-less line
        ("L2,a:5\nL3,lst_x:[1,2]<|end|>\nL4,\nL5,b:True\nL6,", 2, False),  # nothing after the stop string
        ("L3,lst_x:[1,2]\nL4,", 0, False),  # trace lines, but not from L2: nothing matches
        ("I cannot trace this program.", 0, True),  # no trace line at all
        ("", 0, True),
        ("<think>L2,a:5</think> no idea", 0, True),  # trace lines only inside the reasoning
    ],
    ids=["exact", "fenced", "fence-first-line", "spaces", "value-less", "think", "prefix", "missing-last",
         "lower-true", "wrong-line", "stop", "from-L3", "prose", "empty", "only-thinking"],
)
def test_crafted_responses(response: str, steps: int, parse_failed: bool) -> None:
    score = score_response(response, TARGET)
    assert (score.steps, score.total, score.correct, score.parse_failed) == (steps, 5, steps == 5, parse_failed)


def test_vote_key_ignores_spaces_and_blank_lines_but_not_chatter() -> None:
    exact = score_response(EXACT, TARGET).vote_key
    assert score_response("L2, a: 5\n\nL3,lst_x:[1, 2]\nL4,\nL5,b:True\nL6,", TARGET).vote_key == exact
    assert score_response(EXACT + "\n```", TARGET).vote_key != exact
    assert score_response("no trace", TARGET).vote_key == ""


def test_empty_target_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="empty target"):
        score_response("L2,a:1", "\n \n")


# --- pass@k -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("c", "k", "expected"),
    [(0, 5, 0.0), (1, 5, 0.1613), (1, 15, 0.4839), (1, 31, 1.0), (5, 5, 0.6129), (5, 15, 0.9743), (5, 31, 1.0)],
)
def test_pass_at_k_matches_the_l0_bench_table_for_31_voters(c: int, k: int, expected: float) -> None:
    assert aggregate.pass_at_k(31, c, k) == pytest.approx(expected, abs=5e-5)


def test_pass_at_k_by_hand_and_by_the_product_form() -> None:
    assert aggregate.pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 - C(3,2)/C(5,2)
    assert aggregate.pass_at_k(4, 2, 2) == pytest.approx(1 - 1 / 6)  # 1 - C(2,2)/C(4,2)
    assert aggregate.pass_at_k(5, 2, 4) == 1.0  # n - c = 3 < k
    rng = random.Random(0)
    for _ in range(200):
        n = rng.randrange(1, 40)
        c, k = rng.randrange(0, n + 1), rng.randrange(1, n + 1)
        product = 1.0 if n - c < k else 1 - math.prod(1 - k / j for j in range(n - c + 1, n + 1))
        assert aggregate.pass_at_k(n, c, k) == pytest.approx(product, abs=1e-12)
    with pytest.raises(ValueError):
        aggregate.pass_at_k(3, 4, 1)


# --- majority vote ----------------------------------------------------------------------------------------------

def record(item: str, voter: int, key: str, correct: int, steps: int) -> dict:
    return {"item_id": item, "voter": voter, "key": key, "correct": correct, "steps": steps, "total": 5}


# P: keys K1 K2 K2 K1 K3 -> K1 and K2 tie with 2 votes; K1 was voted first (voter 0) and is correct (5 steps).
# Q: K9 x4, K8 -> K9 wins, wrong with 3 steps. R: voter 4 missing -> no majority@5 and no pass@5.
RECORDS = [
    *(record("P", v, key, corr, steps) for v, (key, corr, steps) in
      enumerate([("K1", 1, 5), ("K2", 0, 2), ("K2", 0, 2), ("K1", 1, 5), ("K3", 0, 0)])),
    *(record("Q", v, "K9" if v < 4 else "K8", 0, 3 if v < 4 else 1) for v in range(5)),
    *(record("R", v, f"K{v}", corr, 5 * corr) for v, corr in enumerate([1, 1, 0, 0])),
]


def test_majority_at_5_and_pass_at_5_by_hand() -> None:
    shuffled = list(RECORDS)
    random.Random(3).shuffle(shuffled)  # document order must not matter
    assert aggregate.maj_at_5_acc(shuffled) == pytest.approx((1 + 0) / 2)
    assert aggregate.maj_at_5_steps(shuffled) == pytest.approx((5 + 3) / 2)
    # P: n=5, c=2, k=5 -> 1 (n - c < k); Q: c=0 -> 0; R skipped (4 voters).
    assert aggregate.pass_at_5(shuffled) == pytest.approx(0.5)
    # pass@2 also counts R: P 1 - 3/10, Q 0, R 1 - 1/6.
    assert aggregate.mean_pass_at_k(shuffled, 2) == pytest.approx((0.7 + 0 + 5 / 6) / 3)


def test_majority_ties_go_to_the_lowest_voter_and_only_the_first_k_voters_vote() -> None:
    group = [record("X", v, key, int(key == "A"), 1) for v, key in enumerate(["C", "A", "A", "B", "B"])]
    assert aggregate.majority(group, 5)["voter"] == 1  # A and B tie, A was voted first (voter 1)
    assert aggregate.majority(group, 3)["key"] == "A"  # voters 0..2 only
    assert aggregate.majority(group, 1)["key"] == "C"
    assert aggregate.majority(group[:4], 5) is None  # voter 4 missing
    assert aggregate.majority([*group[:2], *group[3:]], 5) is None  # voter 2 missing


def test_a_repeated_voter_counts_once() -> None:
    twice = [record("X", 0, "A", 1, 5), record("X", 0, "B", 0, 0), record("X", 1, "B", 0, 0)]
    assert aggregate.by_item(twice) == {"X": [twice[0], twice[2]]}


def test_aggregations_over_nothing_are_nan_and_total_counts() -> None:
    assert math.isnan(aggregate.maj_at_5_acc([]))
    assert math.isnan(aggregate.pass_at_5([record("X", 0, "A", 1, 5)]))
    assert aggregate.total([1.0, 0.0, 1.0]) == 2


def test_vote_records_agree_when_responses_agree() -> None:
    first = aggregate.vote_record("P", 0, score_response("L2, a:5\nL3,lst_x:[1,2]", TARGET))
    second = aggregate.vote_record("P", 1, score_response("L2,a:5\n\nL3,lst_x:[1, 2]", TARGET))
    assert first["key"] == second["key"] and first["steps"] == 2 and first["correct"] == 0
    assert first == {**second, "voter": 0}
