"""Answer parsing: explicit answers are read, ambiguous prose is not; fuzzed with hypothesis."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from levante_tasks.harness.parsing import parse_choice, parse_number

LETTERS = ["A", "B", "C", "D"]


@pytest.mark.parametrize(
    ("text", "letter", "method"),
    [
        ("B", "B", "lone_letter"),
        ("(C).", "C", "lone_letter"),
        ("**D**", "D", "lone_letter"),
        ("The answer is D.", "D", "answer_is"),
        ("Answer: A", "A", "answer_is"),
        ('{"answer": "C", "reason": "it is round"}', "C", "json"),
        ('```json\n{"answer": "A"}\n```', "A", "json"),
        ("<think>maybe A, maybe B</think>B", "B", "lone_letter"),
        ("8", "A", "option_text"),
        ("The answer is 4", "B", "option_text"),
        ("ANSWER: b", "B", "answer_is"),
        ("answer: c.", "C", "answer_is"),
        ("The cat is on the left.\nANSWER: d", "D", "answer_is"),
        ("ANSWER: a\nANSWER: b", None, "none"),
        ("Answer: a cat", None, "none"),
        ("the answer is b", None, "none"),
        ("a cat", None, "none"),
        ("The answer is A or B", None, "none"),
        ("I think it is the first one", None, "none"),
        ("E", None, "none"),
        ("", None, "none"),
    ],
)
def test_examples(text: str, letter: str | None, method: str) -> None:
    parsed = parse_choice(text, LETTERS, ["8", "4", "2", "1"])
    assert (parsed.letter, parsed.method) == (letter, method)
    assert (parsed.confidence > 0) == (letter is not None)


def test_scores_json_gives_argmax_and_scores() -> None:
    text = json.dumps({"answer": "A", "scores": {"A": -2.0, "B": -0.1, "C": -3.0, "D": -5.0}, "scores_kind": "logprob"})
    parsed = parse_choice(text, LETTERS)
    assert parsed.method == "scores" and parsed.letter == "B" and parsed.scores["C"] == -3.0


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80), st.integers(2, 5))
def test_fuzz_never_crashes_and_stays_in_label_set(text: str, n: int) -> None:
    letters = LETTERS[:n] if n <= 4 else LETTERS + ["E"]
    parsed = parse_choice(text, letters, [str(i) for i in range(n)])
    assert parsed.letter is None or parsed.letter in letters
    assert (parsed.letter is None) == (parsed.method == "none")


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(LETTERS), st.sampled_from(["{}", "({})", "{}.", " {} ", "Answer: {}", '{{"answer": "{}"}}']))
def test_fuzz_explicit_letters_round_trip(letter: str, template: str) -> None:
    assert parse_choice(template.format(letter), LETTERS).letter == letter


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["A", "B"]), st.text(alphabet="abcdefghij ,", min_size=1, max_size=30))
def test_fuzz_prose_with_two_letters_is_not_parsed(first: str, prose: str) -> None:
    assert parse_choice(f"It could be {first} or {'B' if first == 'A' else 'A'} {prose}", LETTERS).letter is None


@pytest.mark.parametrize(
    ("text", "value"), [("0.35", 0.35), ('{"answer": 0.2}', 0.2), ("The answer is 0.7.", 0.7), ("0.2 or 0.3", None)]
)
def test_numbers(text: str, value: float | None) -> None:
    assert parse_number(text)[0] == value
