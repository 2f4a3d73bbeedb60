"""Answer parsing: each accepted form of the grammar (docs/tasks.md) is read with its form name and confidence,
ambiguous prose is not; fuzzed with hypothesis on both sides (small, derandomized runs: CI is reproducible)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from levante_tasks.core.parsing import CONFIDENCE, parse_choice, parse_number

LETTERS = ["A", "B", "C", "D"]
FUZZ = settings(max_examples=200, deadline=None, derandomize=True)


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
        ("The cat is on the left.\nANSWER: d", "D", "answer_line"),
        ("ANSWER: a\nANSWER: b", None, "none"),
        ("Answer: a cat", None, "none"),
        ("the answer is b", None, "none"),
        ("a cat", None, "none"),
        ("The answer is A or B", None, "none"),
        ("I think it is the first one", None, "none"),
        ("E", None, "none"),
        ("", None, "none"),
        # forms of the grammar beyond the ones above
        ("C) the red one", "C", "letter_first"),
        ("D. four", "D", "letter_first"),
        ("(B) because it is bigger", "B", "letter_first"),
        ("Option D is correct", "D", "option_is"),
        ("I think (C) is the right answer.", "C", "option_is"),
        ("I pick (B)", "B", "i_choose"),
        ("I would choose C because it has more dots.", "C", "i_choose"),
        ("The dog is on the left in the second picture.\nB", "B", "final_letter"),
        ("The dog is on the left in the second picture. B.", "B", "final_letter"),
        ('{"answer": "B", "reason": "the dog is on the le', "B", "near_json"),
        ('{"answer": "C",}', "C", "near_json"),
        ("{'answer': 'd'}", "D", "near_json"),
        ('Here is my answer: {"answer": "A"} as asked.', "A", "near_json"),
        ('{"answer": "b"}', "B", "json"),
        ('{"answer": "b", "reason": "The answer is C"}', "B", "json"),
        ("The answer is B because the dog is bigger", "B", "answer_is"),
        ("A) cat\nB) dog\nC) bird\n\nANSWER: B", "B", "answer_line"),  # the options restated, then the answer
        ("A is a cat, B a dog, C a bird.\nANSWER: B", "B", "answer_line"),  # reasoning naming letters, then declared
        ("The answer is B. Wait, actually it is C.\nANSWER: C", "C", "answer_line"),  # corrected, then declared
        ("A and C are wrong; B matches.\nANSWER: B", "B", "answer_line"),
        ("ANSWER: C\nSo\nANSWER: B", None, "none"),  # two declared answers
        ("Reasoning.\nANSWER: B because", "B", "answer_is"),  # not a bare last ANSWER line: the prose rules
        # ambiguous or out of range: unparsed
        ("The answer is A cat.", None, "none"),
        ("Answer: A because", None, "none"),
        ("A cat is on the mat.", None, "none"),
        ("The answer is B. Option C is correct.", None, "none"),
        ("C) the red one. The answer is D.", None, "none"),
        ('{"answer": "maybe", "reason": "The answer is B"}', None, "none"),
        ('{"answer": "B", "answer": "C"}', None, "none"),
        ("{'answer': 'B', 'other': {'answer': 'C'}}", None, "none"),
        ("Option B is not correct", None, "none"),
        ("The answer is E.", None, "none"),
        ("E) none of them", None, "none"),
        ("I am not sure which one. Maybe the first", None, "none"),
    ],
)
def test_examples(text: str, letter: str | None, method: str) -> None:
    parsed = parse_choice(text, LETTERS, ["8", "4", "2", "1"])
    assert (parsed.letter, parsed.method) == (letter, method)
    assert (parsed.confidence > 0) == (letter is not None)


ANIMALS = ["cat", "dog", "bird", "fish"]


@pytest.mark.parametrize(
    ("text", "letter", "method"),
    [
        # a capitalised word's first letter is not a letter answer (parser version 3)
        ("The answer is Dog.", "B", "option_text"),
        ("I choose Dog because it is bigger.", None, "none"),
        ("Answer: Depends on the angle", None, "none"),
        ("The answer is: Cannot determine.", None, "none"),
        ("Answer: Based on the picture, the dog is bigger, so C.", None, "none"),
        ("The answer is 'Dog'.", "B", "option_text"),
        ("**Cat**", "A", "option_text"),
        ('"Bird"', "C", "option_text"),
        ("The answer is **A cat**.", None, "none"),
        ("Answer: The correct answer is B.", "B", "answer_is"),
        # several letters and hedges
        ("Answer: B, D", None, "none"),
        ("The answer is B, C.", None, "none"),
        ("The answer is B (or possibly C).", None, "none"),
        ("The answer is B, though D is also possible.", None, "none"),
        ("B OR C", None, "none"),
        ("The answer is B OR C.", None, "none"),
        # option_is: the article check looks after the letter, every occurrence counts
        ("Option B is correct. Option A is correct too.", None, "none"),
        ("Option A is correct. Cats are small.", "A", "option_is"),
        ("Option A is correct because the cat is small.", "A", "option_is"),
        # self-corrections and a restated one-line option list: two letters stated
        ("The answer is B. Wait, actually it is C.", None, "none"),
        ("The answer is B.\n\nOn second thought, C.", None, "none"),
        ('{"answer": "B", "confidence": 0.3} Actually I changed my mind, C.', None, "none"),
        ("A. cat B. dog C. bird D. fish. I'm not sure which.", None, "none"),
        ("I pick (A) because A is the cat.", "A", "i_choose"),  # the same letter twice is one answer
    ],
)
def test_capitalised_words_several_letters_and_corrections(text: str, letter: str | None, method: str) -> None:
    parsed = parse_choice(text, LETTERS, ANIMALS)
    assert (parsed.letter, parsed.method) == (letter, method)


VALUES = ["4", "2", "8", "1"]  # option texts: C reads 8


@pytest.mark.parametrize(
    ("text", "letter", "method"),
    [
        # an option named alone as a sentence
        ("Option B.", "B", "option_is"),
        ("**Option C**", "C", "option_is"),
        ("The dog is bigger. Option D.", "D", "option_is"),
        ("The answer is option B.", "B", "answer_is"),
        # a bold or final answer line after reasoning that names other letters: the declared answer
        ("C is a cat and D a bird, so the dog.\n**Answer: B**", "B", "answer_line"),
        ("The dog is bigger.\n**Answer:** D", "D", "answer_line"),
        ("C is a cat.\nFinal Answer: B", "B", "answer_line"),
        # a LaTeX boxed letter; closing reasoning that names other letters, the declared answer
        (r"\boxed{B}", "B", "answer_is"),
        (r"The answer is $\boxed{C}$.", "C", "answer_is"),
        (r"\boxed{\text{D}}", "D", "answer_is"),
        ("C has 3 dots and D has 5.\nSo the answer is $\\boxed{B}$.", "B", "answer_line"),
        # an option's text followed by its own letter in brackets
        ("The answer is 8 (C).", "C", "answer_is"),
        ("Answer: 8 (C)", "C", "answer_is"),
        ("The dog has more. 8 (C)", "C", "answer_is"),
        ("Answer: 4", "A", "option_text"),
        # an answer, then an explanation that rules the other options out
        ("B. Because A is too small and C is too big.", "B", "letter_first"),
        ("The answer is B. Option A is wrong because it is too small.", "B", "answer_is"),
        ("The answer is D, not C.", "D", "answer_is"),
        ("The answer is B, not A or C.", "B", "answer_is"),
        ("I pick (B): A and C are wrong, D is too big.", "B", "i_choose"),
        ("The answer is B because A and C are too small.", "B", "answer_is"),
        ("Option C can't be right and D is too small. I choose A.", "A", "i_choose"),
        ("It's not B. The answer is C.", "C", "answer_is"),
        ("Not A. Not B. C.", "C", "final_letter"),
        # "it" after another option's letter refers to that option, not to the answer
        ("B. A is too small, so it is wrong.", "B", "letter_first"),
    ],
)
def test_option_sentences_bold_lines_boxed_letters_valued_letters_and_explanations_are_read(
        text: str, letter: str, method: str) -> None:
    parsed = parse_choice(text, LETTERS, VALUES)
    assert (parsed.letter, parsed.method) == (letter, method)


@pytest.mark.parametrize(
    "text",
    [
        # negations and eliminations: a form taken back, a letter ruled out, a `<word>: X` line
        "The incorrect answer is C.",
        "The least likely answer is D.",
        "The wrong option is C.",
        "The worst choice would be B.",
        "Incorrect answer: C",
        "I don't think the answer is B.",
        "Every option except (C) is correct.",
        "Eliminated: A",
        "Not: D",
        "Wrong: C",
        "C: incorrect",
        "D) wrong",
        "Option B is wrong.",
        "The answer is not C.",
        "Rule out B.",
        r"So the incorrect answer is $\boxed{C}$.",
        "The dog is bigger.\nThe least likely answer is $\\boxed{C}$.",
        "The incorrect answer is C. The answer is B.",
        # the new forms keep the strictness: a second letter, a hedge, a contradiction
        "Option B. Wait, actually C.",
        "Option B or C.",
        "Option A. Option B.",
        "The answer is B. No, B is wrong.",
        r"\boxed{B}. Wait, actually it is C.",
        r"\boxed{B} or \boxed{C}",
        "C is a cat.\n**Answer: B**\n**Answer: C**",
        "The answer is 8 (A).",  # 8 is C's text
        "The answer is 2 (C).",
        "B. Because A is too small and C is the dog.",  # C is not ruled out
        "The answer is A or B, not C.",
        "The answer is B, though D is also possible.",
        # a form asked as a question, or taken back by what refers to it ("it", "that", "which") or a bracket
        "The answer is B?",
        "So the answer is B? Wait, no, let me recount.",
        "Option B is correct?",
        "I choose (B)?",
        "The dog is bigger.\n$\\boxed{B}$?",
        "The tempting answer is B, but it's wrong.",
        "The obvious answer is B, but actually it is wrong.",
        "The answer is B, which is incorrect.",
        "The answer should be B, but it isn't.",
        "So the answer is $\\boxed{B}$.\nWait, that's wrong.",
        "Answer: B (incorrect)",
        "Answer: B [wrong]",
        # a negation negated leaves the other option standing
        "The answer is B. However, C is not wrong either.",
        "The answer is B, but C can't be ruled out.",
        "The answer is B, though I would not rule out C.",
        "The answer is B; we cannot exclude C.",
        "The answer is B. Option C doesn't look wrong either.",
    ],
)
def test_negations_eliminations_and_contradictions_are_not_read(text: str) -> None:
    assert parse_choice(text, LETTERS, VALUES).method == "none", text


@pytest.mark.parametrize("scores", [{"A": -1.0, "B": -1.0, "C": -1.0, "D": -1.0}, {"A": -3.0, "B": -0.5, "C": -0.5,
                                                                              "D": -2.0}])
def test_tied_scores_are_unparsed_but_kept(scores: dict[str, float]) -> None:
    parsed = parse_choice(json.dumps({"scores": scores}), LETTERS)
    assert (parsed.letter, parsed.method, parsed.confidence, parsed.scores) == (None, "none", 0.0, scores)


def test_scores_json_gives_argmax_and_scores() -> None:
    text = json.dumps({"answer": "A", "scores": {"A": -2.0, "B": -0.1, "C": -3.0, "D": -5.0}, "scores_kind": "logprob"})
    parsed = parse_choice(text, LETTERS)
    assert parsed.method == "scores" and parsed.letter == "B" and parsed.scores["C"] == -3.0


@FUZZ
@given(st.text(max_size=80), st.integers(2, 5))
def test_fuzz_never_crashes_and_stays_in_label_set(text: str, n: int) -> None:
    letters = LETTERS[:n] if n <= 4 else LETTERS + ["E"]
    parsed = parse_choice(text, letters, [str(i) for i in range(n)])
    assert parsed.letter is None or parsed.letter in letters
    assert (parsed.letter is None) == (parsed.method == "none")


@FUZZ
@given(st.sampled_from(LETTERS), st.sampled_from(["{}", "({})", "{}.", " {} ", "Answer: {}", '{{"answer": "{}"}}']))
def test_fuzz_explicit_letters_round_trip(letter: str, template: str) -> None:
    assert parse_choice(template.format(letter), LETTERS).letter == letter


@FUZZ
@given(st.sampled_from(["A", "B"]), st.text(alphabet="abcdefghij ,", min_size=1, max_size=30))
def test_fuzz_prose_with_two_letters_is_not_parsed(first: str, prose: str) -> None:
    assert parse_choice(f"It could be {first} or {'B' if first == 'A' else 'A'} {prose}", LETTERS).letter is None


@pytest.mark.parametrize(
    ("text", "value"), [("0.35", 0.35), ('{"answer": 0.2}', 0.2), ("The answer is 0.7.", 0.7), ("0.2 or 0.3", None),
                        ("The answer is 0.3. No, the answer is 0.5.", None), ("The answer is 1,000.", 1000.0),
                        ("1,000", 1000.0), ("Answer: 2-3", None), ("the answer: 2 to 3", None),
                        ("The answer is 0.2 - 0.3", None), ("The answer is 3/4.", 0.75), ("3/4", 0.75), ("3/0", None),
                        ("The answer is 3/4.5", None)]
)
def test_numbers(text: str, value: float | None) -> None:
    assert parse_number(text)[0] == value


def test_every_form_has_a_confidence_and_a_letter_outside_the_items_options_is_never_read() -> None:
    assert all(0 < value <= 1 for form, value in CONFIDENCE.items() if form != "none") and CONFIDENCE["none"] == 0
    for text in ("C", "The answer is C.", "C) red", "I pick (C)", '{"answer": "c"}', "Option C is correct"):
        assert parse_choice(text, ["A", "B"]).method == "none", text  # a two-option item shows A and B only
        assert parse_choice(text, ["A", "B", "C"]).letter == "C", text


# Surrounding prose that cannot itself be an answer: words (capitalised ones too, whose first letter is no answer),
# no letter standing alone, no brace, none of the form words.
WORDS = ["bed", "fig", "hill", "jam", "milk", "Dog", "Cat", "Bird", "The", "Depends", "Cannot", "Every", "Hello",
         "Because", "Anyway", "Cats", "bird,", "Grey"]
PROSE = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)
# (template, where): `any` sits between two sentences of prose, `start` opens the answer, `end` closes it.
FORMS = [
    ("The answer is {X}.", "any", "answer_is"), ("Answer: ({X})", "any", "answer_is"),
    ("the correct option is **{X}**.", "any", "answer_is"), ("Option {X} is correct.", "any", "option_is"),
    ("I pick ({X}).", "any", "i_choose"), ("I would choose {X}.", "any", "i_choose"),
    ("\nANSWER: {x}\n", "any", "answer_is"), ("\nANSWER: {x}", "end", "answer_line"),
    ('{{"answer": "{x}"}}', "any", "near_json"),
    ("{{'answer': '{X}',}}", "any", "near_json"), ("{X}) ", "start", "letter_first"),
    ("{X}. ", "start", "letter_first"), ("({X}) ", "start", "letter_first"), ("\n{X}", "end", "final_letter"),
    ('{{"answer": "{X}", "reason": "the', "end", "near_json"),
    ("Option {X}.", "any", "option_is"), ("$\\boxed{{{X}}}$", "any", "answer_is"),
    ("\n**Answer: {X}**", "end", "answer_line"), ("\nSo the answer is $\\boxed{{{X}}}$.", "end", "answer_line"),
]
# what takes a letter back: a negated form, an eliminated or excluded letter, a `<word>: X` line
NEGATED = ["The incorrect answer is {x}.", "The least likely answer is {x}.", "The wrong option is {x}.",
           "Incorrect answer: {x}", "I don't think the answer is {x}.", "Every option except ({x}) is correct.",
           "Eliminated: {x}", "Not: {x}", "{x}: incorrect", "Option {x} is wrong.", "The answer is not {x}.",
           "Rule out {x}.", "It is not {x}.", "So the worst choice would be **{x}**.", "Excluded: {x}"]
# what rules another option out in an explanation after the answer
# what takes back a form naming {x} after it: a question, a pronoun ruled out, a bracketed rejection
TAKEN_BACK = ["The answer is {x}", "Option {x}", "I choose {x}", "Answer: ({x})", "The answer is $\\boxed{{{x}}}$"]
TAKEN_BY = ["?", ", but it's wrong.", ", which is incorrect.", ". That is not correct.", " (wrong)."]
RULED_OUT = ["{y} is wrong.", "Option {y} is too small.", "Not {y}.", "{y} can't be right.", "Rule out {y}.",
             "{y} is incorrect.", "{y} is too small, so it is wrong."]
# what leaves another option standing although it negates: a negation negated (a bare "A can't" is the article)
STANDING = ["{y} is not wrong either.", "({y}) can't be ruled out.", "I would not rule out {y}.",
            "We cannot exclude {y}.", "Option {y} is not the only wrong one."]


def _embed(template: str, where: str, letter: str, before: str, after: str) -> str:
    form = template.format(X=letter, x=letter.lower())
    if where == "start":
        return f"{form}{after}"
    if where == "end":
        return f"{before}.{form}" if before else form.strip()
    return f"{before}. {form} {after}".strip(" ")


@FUZZ
@given(st.sampled_from(FORMS), st.integers(2, 8), st.data(), PROSE, PROSE)
def test_fuzz_every_accepted_form_in_prose_reads_its_letter(form, n, data, before, after) -> None:
    letters = list("ABCDEFGH"[:n])
    letter = data.draw(st.sampled_from(letters))
    template, where, name = form
    parsed = parse_choice(_embed(template, where, letter, before, after), letters)
    assert parsed.letter == letter
    line_form = template.startswith("\nANSWER") or name == "answer_line"  # alone: answer_is; closing: answer_line
    assert parsed.method in ((name, "lone_letter") if not line_form else ("answer_is", "answer_line")), parsed
    assert parsed.confidence == CONFIDENCE[parsed.method]


@FUZZ
@given(st.sampled_from([f for f in FORMS if f[1] != "end"]), st.sampled_from([f for f in FORMS if f[1] != "start"]),
       st.integers(2, 8), st.data(), PROSE)
def test_fuzz_near_misses_stay_unparsed(first, second, n, data, prose) -> None:
    """Two forms naming different letters (one opening or inside the answer, one inside or closing it), a form and
    a second standalone letter, a letter beyond the item's options, the article, a lower-case prose letter, a hedge,
    a negated form or ruled-out letter (alone, after prose, or after a form naming the same letter), a form and a
    second letter whose negation is negated ("C can't be ruled out"), a form asked or taken back ("The answer is B?",
    "The answer is B, but it's wrong."): all unparsed."""
    letters = list("ABCDEFGH"[:n])
    x, y = data.draw(st.lists(st.sampled_from(letters), min_size=2, max_size=2, unique=True))
    outside = "ABCDEFGH"[n] if n < 8 else "Z"
    negated = data.draw(st.sampled_from(NEGATED)).format(x=x)
    standing = data.draw(st.sampled_from(STANDING)).format(y=y)
    two_forms = _embed(first[0], first[1], x, prose, "") + ". " + _embed(second[0], second[1], y, prose, "")
    closing = second[0].startswith("\nANSWER") or second[2] == "answer_line"  # a declared answer (test_examples)
    texts = [
        *([] if closing else [two_forms]),
        _embed(first[0], first[1], outside, prose, prose),
        f"{prose}. The answer is A cat {prose}.",
        f"{prose}. the answer is {x.lower()}.",
        f"{prose}. The answer is {x} or {y}.",
        f"{prose}. The answer is {x} OR {y}.",
        _embed(first[0], first[1], x, prose, "") + f". {prose}, actually it is {y}.",  # a self-correction
        f"{prose}. The answer is {x}, {y}.",
        negated,
        f"{prose}. {negated}",
        f"{prose}.\n{negated}",
        _embed(first[0], first[1], x, prose, "") + f" {prose}. {x} is wrong.",
        _embed(first[0], first[1], x, prose, "") + f" {prose}. {standing}",
        f"{prose}. " + data.draw(st.sampled_from(TAKEN_BACK)).format(x=x) + data.draw(st.sampled_from(TAKEN_BY)),
    ]
    for text in texts:
        assert parse_choice(text, letters).method == "none", text


@FUZZ
@given(st.sampled_from([f for f in FORMS if f[1] != "end"]), st.integers(2, 8), st.data(), PROSE)
def test_fuzz_an_answer_then_an_explanation_ruling_out_other_options_reads_the_answer(form, n, data, prose) -> None:
    """A form naming a letter, then prose and the other options ruled out one by one or together ("B. Because A is
    too small and C is too big."): the form's letter."""
    letters = list("ABCDEFGH"[:n])
    x = data.draw(st.sampled_from(letters))
    others = data.draw(st.lists(st.sampled_from([y for y in letters if y != x]), min_size=1, max_size=3, unique=True))
    if len(others) > 1 and data.draw(st.booleans()):
        explanation = f"{' and '.join(others)} are wrong."
    else:
        explanation = " ".join(data.draw(st.sampled_from(RULED_OUT)).format(y=y) for y in others)
    text = _embed(form[0], form[1], x, prose, "") + f" {prose}. {explanation}"
    assert parse_choice(text, letters).letter == x, text


@FUZZ
@given(st.sampled_from(["The answer is", "Answer:", "answer: (", "I choose", "I'd pick", "Option", "**"]),
       st.sampled_from([w for w in WORDS if w[0].isupper()]), PROSE, st.sampled_from(["", ".", "**", " is correct."]))
def test_fuzz_a_capitalised_word_is_not_its_first_letter(prefix: str, word: str, prose: str, end: str) -> None:
    text = f"{prefix} {word} {prose}{end}"
    assert parse_choice(text, list("ABCDEFGH")).method == "none", text
