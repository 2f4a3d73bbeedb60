"""Read a model's answer by a small grammar of accepted forms (docs/tasks.md, "Answer parsing"), each a form name
(`Parsed.method`, recorded as `parse_method`) with a fixed confidence; anything else is left unparsed (wrong).

Order: a JSON object decides alone (strict `json`/`scores`, else `near_json`: an object in prose, truncated, with
single quotes or a trailing comma); then a last line `ANSWER: B` (`**Answer: B**`) or one whose one letter is a
`\\boxed{B}` after reasoning (`answer_line`) decides when no other ANSWER line or boxed letter contradicts it; then
the whole answer as one letter (`lone_letter`); then the letter forms of the prose (`answer_is`, `option_is`,
`i_choose`, `letter_first`, `final_letter`; "The answer is 8 (C)." when C's text is 8), which must all name the same
letter (`letter_first` only when no second line opens with a marked letter, as a restated option list "A) cat /
B) dog" does); then the whole answer as one option's text (`option_text`). A letter is a standalone capital, never
a word's first letter ("Dog"). Rejected as ambiguous: two different letters (a form's letter and any other
standalone letter A-H of the answer: "B, D", "B. Wait, actually it is C."), a hedge ("A or B"), a letter outside
the item's options, a tie of scores, and a bare `A` followed by a word ("The answer is A cat": the article).
Negations: a form after a negating word in its clause states nothing ("The incorrect answer is C"), and a letter
ruled out where it stands ("not C", "A is too small", "C: incorrect") is no answer and no second letter ("B. Because
A is too small." is B); a negation negated ("C can't be ruled out") rules nothing out; a form asked or taken back
right after it ("The answer is B?", "..., but it's wrong", "B (wrong)") states nothing. A false reading is worse
than none: what the grammar does not know stays unparsed.
Upper-case letters only, except where a letter cannot be an article: a JSON answer value and a line `ANSWER: b`.
An item of a translated locale is read by these forms plus its locale's own (`core.answer_words`: "Die Antwort ist
B", "Respuesta: C", its hedges, negations, quotes and elisions), under the same rules; an English item by these
alone. `PARSER_VERSION` names this grammar in every record (a translated item's with its locale's part,
`grammar_version`: "4+de.2"); change it with any change of what is read.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from levante_tasks.core.answer_words import WORDS, AnswerWords
from levante_tasks.schema import locales
from levante_tasks.schema.locales import ENGLISH, Locale

PARSER_VERSION = "4"  # set by hand: bump whenever a response may be read differently

CONFIDENCE = {
    "scores": 1.0,  # JSON with one finite score per letter: the argmax
    "json": 1.0,  # the answer is a JSON object {"answer": "B"}
    "near_json": 0.9,  # an object-like answer field: in prose, truncated, single quotes, trailing comma
    "answer_line": 0.95,  # reasoning (any letters), then a last line "ANSWER: B" no other ANSWER line contradicts
    "answer_is": 0.9,  # "The answer is B.", "Answer: (C)", "final answer: D", a line "ANSWER: b"
    "option_is": 0.85,  # "Option D is correct", "(B) is the right answer"
    "i_choose": 0.85,  # "I pick (B)", "I would choose C", "I'll go with D"
    "lone_letter": 0.8,  # the whole answer is one letter: "B", "(C).", "**D**"
    "letter_first": 0.8,  # a marked letter opening the answer: "C) the red one", "D. four", "(B) because ..."
    "final_letter": 0.7,  # reasoning, then a last sentence or line that is one letter: "... on the left. B"
    "option_text": 0.7,  # the whole answer equals one option's text
    "lone_number": 0.8,  # slider: the whole answer is one number
    "none": 0.0,
}

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_OPEN_MARKS, _CLOSE_MARKS = r"\(\[\"'*", r"\)\]\"'*"  # what may stand around a letter: brackets, quotes, bold
# The English forms, `{letter}` = the letter token, `{start}` = a sentence start or a bracket before the letter,
# `{opens}` = a sentence start (bold allowed), `{end}` = the letter closes its sentence or line: "Option B." is a
# sentence of its own, "I pick option B." an i_choose, "Option B is wrong" none.
_START = r"(?:^|(?<=[.!?\n])\s*)|(?<=\s)(?=[\(\[*])"
_OPENS = r"(?:^|(?<=[.!?\n]))\s*[*_]*"
_END = r"(?=[.!]?[^\S\n]*(?:\n|$)|[.!]\s)"
_ENGLISH_FORMS = {
    "answer_is": (r"\b(?:answer|option|choice)\s*(?:is|:|would\s+be|should\s+be|must\s+be)\s*:?\s*"
                  r"(?:(?:option|choice)\s+)?{letter}",
                  r"\\boxed\s*\{\s*(?:\\text(?:bf)?\s*\{\s*)?{letter}\s*\}?\s*\}"),
    "option_is": (r"(?:\b(?:option|choice|answer|picture)\s+|{start}){letter}"
                  r"\s+(?:is|seems|looks)\s+(?:to\s+be\s+)?(?:the\s+)?(?:correct|right|best)\b",
                  r"{opens}(?:option|choice|answer)\s+{letter}{end}"),
    "i_choose": (r"\bI\s*(?:would|will|'d|'ll)?\s+(?:pick|choose|select|go\s+with)\s+(?:option\s+|answer\s+)?"
                 r"{letter}",),
}
# Words that take back what follows them: a form after one in its clause ("The incorrect answer is C", "The least
# likely answer is D") states no answer, and a letter right after one ("not C", "except D", "rule out A") is ruled
# out. A locale adds its own (`AnswerWords.negations`).
_NEGATIONS = (r"not|no|never|cannot|can't|isn't|aren't|wasn't|weren't|don't|doesn't|didn't|won't|wouldn't|"
              r"shouldn't|couldn't|incorrect|wrong|false|bad|worst|least|eliminat\w*|exclud\w*|except|reject\w*|"
              r"unlikely|implausible|impossible|invalid|rul(?:e|es|ed|ing)\s+out|rather\s+than|instead\s+of|unlike|"
              r"other\s+than|besides|neither|nor")
# after a letter (and the letters joined to it: "A and C are wrong"), what rules it out: "is wrong", "is too small",
# "is not", "can't be", "C: incorrect" (letters upper-case, words in any case but a bare verb's)
_LINKED = r"(?:\s*(?:,?\s*(?i:or|and|nor)|/)\s*[\(\[*]*[A-H][\)\]*]*)*"
# a negation negated is none: "C is not wrong either", "C can't be ruled out", "C is not the only one"
_NOT_NEGATED = (r"(?!(?:\s+(?:be|been|so|that|entirely|necessarily|completely|totally|really|looks?|seems?|the))*"
                r"\s+(?:wrong|incorrect|false|bad|impossible|unlikely|implausible|excluded|eliminated|ruled|"
                r"dismissed|discounted|rejected|out|only)\b)")
_NEGATION_NEGATED = r"(?<!\bnot\s)(?<!n't\s)(?<!\bcannot\s)(?<!\bnever\s)"  # "I would not rule out C"
_RULED_OUT = re.compile(_LINKED + r"(?i:\s+(?:is|are|was|were|seems?|looks?|(?:would|must|should|could)\s+be)\s+"
                        r"(?:also\s+|clearly\s+|definitely\s+|obviously\s+|certainly\s+|then\s+|therefore\s+)?"
                        r"(?:not\b" + _NOT_NEGATED + r"|wrong\b|incorrect\b|false\b|too\s+\w|impossible\b|"
                        r"unlikely\b|implausible\b|eliminated\b|excluded\b|ruled\s+out\b|out\b|"
                        r"the\s+(?:wrong|incorrect|worst|least)\b)"
                        r"|\s+(?-i:isn't|aren't|wasn't|can't|cannot|can\s+not|doesn't|does\s+not|don't|do\s+not|won't|"
                        r"fails?\b|lacks?\b)" + _NOT_NEGATED +  # lower case: "(A) Cannot" may be a word of the answer
                        r"|\s*[:)\]\-\u2013\u2014]+\s*(?:not\b|wrong\b|incorrect\b|false\b|eliminated\b|excluded\b|"
                        r"ruled\s+out\b|impossible\b|unlikely\b))")
# what takes back a form right after it: a question ("The answer is B?", "$\\boxed{B}$?"), a pronoun ruled out in
# its sentence or the next ("The tempting answer is B, but it's wrong.", "... B, which is incorrect.", "...\nWait,
# that's wrong."), a bracketed rejection ("Answer: B (wrong)")
_ASKED = re.compile(r"[\s)\]}*\"'$]*\?")
_AFTER_FORM = r"(?:[^.!?\n]|[.!?](?!\s))*?(?:[.!?]+\s+(?:[^.!?\n]|[.!?](?!\s))*?)?"  # its sentence, or the next
_TAKEN_BACK = (r"\b(?:it|that|this|which)(?:['’]s|\s+(?:is|was|(?:would|must)\s+be|seems?(?:\s+to\s+be)?|looks?))\s+"
               r"(?:also\s+|clearly\s+|actually\s+|definitely\s+|obviously\s+|certainly\s+)?"
               r"(?:(?:wrong|incorrect|false)\b|not\s+(?:correct|right|it|the\s+(?:(?:correct|right)\s+)?answer)\b|"
               r"not\s*(?:[.!,;]|$))"
               r"|\b(?:it|that|this|which)\s+(?:isn['’]t|wasn['’]t)(?:\s+(?:correct|right|it)\b|\s*(?:[.!,;]|$))")
_REJECTED = r"[\s$]*[\(\[]\s*(?i:wrong|incorrect|false|not\s+it)\s*[\)\]]"  # "Answer: B (wrong)"
_CLAUSE = re.compile(r"[^.!?;,:\n]*$")  # the clause a position is in, back to its last boundary
_UNBRACED = str.maketrans("{}", "()")
_BRACKETED = re.compile(r"(?P<open>[\(\[])\s*(?P<letter>[A-Z])\s*(?P<close>[\)\]])")  # "8 (C)"
_SENTENCE = re.compile(r"(?:[^.!?\n]|\.(?!\s))*$")  # the sentence a position is in, back to where it begins
_LETTER_FIRST = re.compile(r"^\s*(?P<open>[\(\[*]*)\s*(?P<letter>[A-Z])(?P<close>[\)\]*]*)(?=\s*[).:\]])")
_LISTED = re.compile(r"^\s*[\(\[*]*[A-Z][\)\]*]*\s*[).:\]]", re.MULTILINE)  # a line opening with a marked letter
_LISTED_AT = re.compile(r"^\s*[\(\[*]*(?=[A-Z][\)\]*]*\s*[).:\]])", re.MULTILINE)  # up to such a letter
_ARTICLES = frozenset("A")  # the one upper-case option letter (A-H) that is also an English word
_NEAR_ANSWER = re.compile(r"[\"']answer[\"']\s*:\s*(?:\"([^\"\n]*)\"?|'([^'\n]*)'?|([^,}\s\"']*))", re.IGNORECASE)
_JSON_VALUE = re.compile(r"^\s*[\(\[\"'*]*\s*([A-Za-z])\s*[\)\]\"'*]*[.]?\s*$")
# a number: thousands separators (`1,000`), a decimal, an exponent, or a fraction of integers (`3/4` = 0.75)
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?:/\d+(?![.,]?\d))?")
_RANGE = r"\s*(?:[-\u2013\u2014/]|\bto\b|\bor\b|\band\b)\s*[-+]?\.?\d"  # "2-3", "2 to 3", "3/4.5": no one number
_NUMBER_IS = re.compile(r"answer\s*(?:is|:)\s*:?\s*(" + _NUMBER.pattern + r")(" + _RANGE + r")?", re.IGNORECASE)


@dataclass(frozen=True)
class _Grammar:
    """The compiled forms of one locale: the English ones, plus the locale's own (`core.answer_words`)."""

    forms: dict[str, tuple[re.Pattern[str], ...]]  # letter form -> its patterns, in `CONFIDENCE` order
    answer_line: re.Pattern[str]  # `ANSWER: b` (or the locale's keyword) as the last thing on its line
    lone: re.Pattern[str]  # the whole answer is one letter
    final: re.Pattern[str]  # a last line or sentence that is one letter
    standalone: re.Pattern[str]  # a letter A-H standing alone anywhere
    hedge: re.Pattern[str]  # two letters offered together: "A or B", "A/B"
    article_next: re.Pattern[str]  # after a bare "A": a word that makes it the article ("A cat", not "A is")
    answer_prefix: re.Pattern[str]  # what may precede an option's text ("The answer is")
    boxed: re.Pattern[str]  # LaTeX `\boxed{B}`, the closing form of math-trained models
    negated: re.Pattern[str]  # a negating word ("incorrect", "least", "not"), searched in a form's clause
    ruled_out: re.Pattern[str]  # a negating word right before a letter ("not C", "except the option D")
    taken_back: re.Pattern[str]  # after a form: what refers back to it and rules it out (`_TAKEN_BACK`, the locale's)
    negated_after: re.Pattern[str] | None  # a negating word right after a letter (German "Ich wähle B nicht")


def _compile(words: AnswerWords | None) -> _Grammar:
    """The grammar of the English forms plus `words`' (None: English alone, exactly as parser version 3 reads)."""
    marks = words.quotes if words else ""
    open_, close = f"[{_OPEN_MARKS}{marks}]*", f"[{_CLOSE_MARKS}{marks}]*"
    elided = r"(?!['’][^\W\d_])" if words and words.elision else ""  # French "C'est": a word, not the letter C
    token = rf"(?P<open>{open_})\s*(?P<letter>[A-Z])(?![^\W_]){elided}(?P<close>{close})"  # not a word's first

    def forms(templates: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(t.replace("{start}", _START).replace("{opens}", _OPENS).replace("{end}", _END)
                                .replace("{letter}", token), re.IGNORECASE) for t in templates)

    def joined(english: str, own: str) -> str:
        return f"{english}|{own}" if words else english

    letter_forms = {form: forms(english + (getattr(words, form) if words else ()))
                    for form, english in _ENGLISH_FORMS.items()}
    line_word = joined("answer", words.answer_line if words else "")
    negations = joined(_NEGATIONS, words.negations if words else "")
    return _Grammar(
        forms={**letter_forms, "letter_first": (_LETTER_FIRST,)},
        answer_line=re.compile(rf"^[^\S\n]*[*_#>]*[^\S\n]*(?:final\s+)?(?:{line_word})[*_]*\s*:\s*{open_}\s*([a-z])\s*"
                               rf"{close}[.!]?[*_]*[^\S\n]*$", re.IGNORECASE | re.MULTILINE),
        lone=re.compile(rf"^[\s{_OPEN_MARKS}{marks}]*([A-Z])[\s{_CLOSE_MARKS}{marks}]*[.,:;!]?{close}\s*$"),
        final=re.compile(rf"(?:^|[.!?]\s+|\n\s*){open_}\s*([A-Z])\s*{close}[.!]?\s*$"),  # not "Not: D"
        standalone=re.compile(rf"(?<![^\W_])(?P<open>{open_})(?P<letter>[A-H])(?![^\W_]){elided}(?P<close>{close})"),
        hedge=re.compile(rf"(?<![^\W_])[A-Z](?:\s*/\s*|\s+(?i:{joined('or|and', words.hedges if words else '')})\s+)"
                         r"[A-Z](?![^\W_])"),
        article_next=re.compile(
            rf"\s+(?!(?:{joined('is|seems|looks|or|and', words.continuations if words else '')})\b)\w"),
        answer_prefix=re.compile(joined(r"^(?:the\s+)?(?:(?:correct|final)\s+)?answer(?:\s+is\s*:?|\s*:)\s*",
                                        f"^{words.option_text_prefix}" if words else ""), re.IGNORECASE),
        boxed=forms((_ENGLISH_FORMS["answer_is"][1],))[0],
        negated=re.compile(rf"(?i:\b(?:{negations})(?![^\W_]))"),
        ruled_out=re.compile(rf"(?i:{_NEGATION_NEGATED}\b(?:{negations})\s+(?:the\s+)?"
                             rf"(?:(?:option|choice|answer|picture)s?\s+)?)"
                             rf"(?:[\(\[*]*[A-H][\)\]*]*\s*(?i:or|and|nor|/)\s*)*{open_}$"),
        taken_back=re.compile(rf"{_AFTER_FORM}(?P<ref>(?i:{joined(_TAKEN_BACK, words.taken_back if words else '')}))"
                              rf"|{_REJECTED}"),
        negated_after=(re.compile(rf"{close}\s+(?i:{words.negations_after})\b")
                       if words and words.negations_after else None),
    )


@cache
def _grammar(locale: Locale) -> _Grammar:
    """The grammar an item of `locale` is read by: the English forms, plus the locale's own for a translated one."""
    return _compile(None if locale.is_source else WORDS[locale.code])


def grammar_version(locale: Locale) -> str:
    """The `parser_version` a record of an item in `locale` carries: `PARSER_VERSION` for English, followed by the
    locale's code and forms version for a translated one (`3+de.1`)."""
    return PARSER_VERSION if locale.is_source else f"{PARSER_VERSION}+{locale.code}.{WORDS[locale.code].version}"


def version_locale(version: str) -> Locale:
    """The locale whose grammar a recorded `parser_version` names (English when it names none); LocaleError for an
    unknown code."""
    _, plus, grammar = version.partition("+")
    return locales.locale(grammar.rpartition(".")[0]) if plus else ENGLISH


@dataclass(frozen=True)
class Parsed:
    """One parsed answer: the letter as presented (None when unparsed) and the form it was read by."""

    letter: str | None
    method: str
    scores: dict[str, float] | None = field(default=None)
    scores_kind: str | None = None

    @property
    def confidence(self) -> float:
        """The fixed confidence of the form (0 when unparsed)."""
        return CONFIDENCE[self.method]


NONE = Parsed(None, "none")


def _clean(text: str) -> str:
    """Drop reasoning blocks and code fences around the answer."""
    text = _THINK.sub("", text or "").strip()
    fence = _FENCE.match(text)
    return fence.group(1).strip() if fence else text


def _json_letter(value: object, letters: Sequence[str]) -> str | None:
    """A JSON answer value as one of this item's letters (either case: a JSON value is never an article)."""
    match = _JSON_VALUE.match(value) if isinstance(value, str) else None
    letter = match.group(1).upper() if match else None
    return letter if letter in letters else None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are unique; `{"answer": "B", "answer": "C"}` is ambiguous (ValueError)."""
    keys = [key.lower() for key, _ in pairs]
    if len(set(keys)) < len(keys):
        raise ValueError("a key occurs twice")
    return dict(pairs)


def _scores(data: dict, letters: Sequence[str]) -> Parsed | None:
    """The argmax of a JSON object's finite per-letter `scores` (one per letter), else None."""
    scores = data.get("scores")
    if not isinstance(scores, dict) or set(scores) != set(letters):
        return None
    values = {k: float(v) for k, v in scores.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    if len(values) != len(letters) or not all(math.isfinite(v) for v in values.values()):
        return None
    kind = data.get("scores_kind") if isinstance(data.get("scores_kind"), str) else "logprob"
    return scored(letters, values, kind)


def scored(letters: Sequence[str], values: dict[str, float], kind: str) -> Parsed:
    """The letter of the highest score (`scores`), or unparsed with the scores kept when several share it (a tie
    names no answer)."""
    best = max(values.values())
    top = [letter for letter in letters if values[letter] == best]
    return Parsed(top[0] if len(top) == 1 else None, "scores" if len(top) == 1 else "none", values, kind)


def _from_json(text: str, letters: Sequence[str], grammar: _Grammar) -> Parsed | None:
    """A JSON answer: the strict object (`scores`, `json`), else an object-like `answer` field (`near_json`).

    None when the text holds no JSON answer; NONE when it does but names no single letter of the item (the prose
    of other fields is never read; prose around an object in prose must not name another letter)."""
    if text.startswith("{"):
        try:
            data = json.loads(text, object_pairs_hook=_unique_keys)
        except ValueError:
            data = None
        if isinstance(data, dict):
            found = _scores(data, letters)
            if found:
                return found
            answer = next((v for k, v in data.items() if isinstance(k, str) and k.lower() == "answer"), None)
            letter = _json_letter(answer, letters)
            return Parsed(letter, "json") if letter else NONE
    braces = grammar.boxed.sub(lambda m: m.group().translate(_UNBRACED), text)  # a `\\boxed{B}` is prose, no object
    start = braces.find("{")
    if start < 0:
        return None
    values = [next(g for g in m.groups() if g is not None) for m in _NEAR_ANSWER.finditer(text, start)]
    if not values:
        return None
    chosen = {_json_letter(v, letters) for v in values}
    end = braces.rfind("}")
    outside = text[:start] + (text[end + 1:] if end > start else "")
    stated, ruled_out = _standalone_letters(outside, grammar)
    try:
        chosen |= set(_prose_letters(outside, grammar).values()) | stated
    except ValueError:
        return NONE
    if len(chosen) != 1 or None in chosen or chosen & ruled_out:  # '{"answer": "A"} A is wrong.'
        return NONE
    return Parsed(chosen.pop(), "near_json")


def _bounded(text: str, match: re.Match, grammar: _Grammar) -> bool:
    """A letter token is not the article: any letter but `A`, or `A` closed by a mark ("(A) cat", "**A**") or not
    followed by a word ("A.", "A is correct"); "A cat", "**A cat**" read as the article."""
    return (match.group("letter") not in _ARTICLES or bool(match.group("close"))
            or not grammar.article_next.match(text, match.end("close")))


def _ruled_out(text: str, start: int, end: int, grammar: _Grammar) -> bool:
    """The letters at text[start:end] (a token with its marks, or two joined: "A and C") are ruled out: right after
    a negating word ("not C", "except (D)", "rule out A") or followed by what rejects them ("A is too small", "A and
    C are wrong", "C: incorrect")."""
    return bool(grammar.ruled_out.search(text, max(0, start - 80), start) or _RULED_OUT.match(text, end)
                or (grammar.negated_after and grammar.negated_after.match(text, end)))


def _token_ruled_out(text: str, match: re.Match, grammar: _Grammar) -> bool:
    """A letter token (a match with `open`, `letter` and `close` groups) the answer rules out (`_ruled_out`)."""
    return _ruled_out(text, match.start("open"), match.end("close"), grammar)


def _negated(text: str, start: int, grammar: _Grammar) -> bool:
    """A form starting at `start` whose clause takes it back before it: "The incorrect answer is C", "The least
    likely answer is D", "I don't think the answer is B"."""
    clause = _CLAUSE.search(text, 0, start)
    return bool(clause and grammar.negated.search(text, clause.start(), start))


def _taken_back(text: str, end: int, grammar: _Grammar) -> bool:
    """A form ending at `end` that the answer asks or takes back right after it (`_ASKED`, `_Grammar.taken_back`);
    a word referring back after another letter refers to that one ("B. A is too small, so it is wrong." is B)."""
    if _ASKED.match(text, end):
        return True
    match = grammar.taken_back.match(text, end)
    if not match or match.group("ref") is None:
        return bool(match)
    between = text[:match.start("ref")]
    return not any(_bounded(between, letter, grammar) for letter in grammar.standalone.finditer(between, end))


def _standalone_letters(text: str, grammar: _Grammar) -> tuple[set[str], set[str]]:
    """The letters A-H standing alone in `text` (not a word's first letter, not the article), except those that
    open the lines of a restated option list ("A) cat" / "B) dog"): (those that may state an answer, those ruled
    out where they stand: "Because A is too small")."""
    listed = {m.end() for m in _LISTED_AT.finditer(text)} if len(_LISTED.findall(text)) > 1 else set()
    stated: set[str] = set()
    ruled_out: set[str] = set()
    for match in grammar.standalone.finditer(text):
        if _bounded(text, match, grammar) and match.start("letter") not in listed:
            (ruled_out if _token_ruled_out(text, match, grammar) else stated).add(match.group("letter"))
    return stated, ruled_out


def _valued(text: str, grammar: _Grammar, texts: Mapping[str, str]) -> set[str]:
    """The letters of "The answer is 8 (C)." (a sentence, less `The answer is`, that is an option's text followed by
    a bracketed letter), each only when the text is that letter's option's; ValueError when it is another's. A text
    that is no option's (or an item without option texts) states nothing."""
    letters = set()
    for match in _BRACKETED.finditer(text):
        sentence = _SENTENCE.search(text, 0, match.start())
        value = _normalized(grammar.answer_prefix.sub("", sentence.group().lstrip()))
        owners = {letter for letter, option in texts.items() if value and option == value}
        if (not owners or _negated(text, match.start(), grammar) or _token_ruled_out(text, match, grammar)
                or _taken_back(text, match.end(), grammar)):
            continue
        if owners != {match.group("letter")}:
            raise ValueError("an option's text with another option's letter")
        letters.add(match.group("letter"))
    return letters


def _prose_letters(text: str, grammar: _Grammar, texts: Mapping[str, str] | None = None) -> dict[str, str]:
    """Form -> letter of each letter form found in prose (every occurrence not negated or ruled out; ValueError when
    they disagree, or a letter a form states is ruled out elsewhere); `texts` the normalized option texts by letter."""
    found: dict[str, str] = {}
    seen: set[str] = set()
    listing = len(_LISTED.findall(text)) > 1  # "A) cat\nB) dog\n...": the options restated, not an answer
    for form, patterns in grammar.forms.items():
        if form == "letter_first" and listing:
            continue
        for match in (m for pattern in patterns for m in pattern.finditer(text)):
            if (match.group("letter").isupper() and _bounded(text, match, grammar)
                    and not _negated(text, match.start(), grammar) and not _token_ruled_out(text, match, grammar)
                    and not _taken_back(text, match.end(), grammar)):
                found.setdefault(form, match.group("letter"))
                seen.add(match.group("letter"))
    for letter in _valued(text, grammar, texts or {}):
        found.setdefault("answer_is", letter)
        seen.add(letter)
    for match in grammar.answer_line.finditer(text):
        found.setdefault("answer_is", match.group(1).upper())
        seen.add(match.group(1).upper())
    final = grammar.final.search(text)
    if final and final.start() > 0:
        found.setdefault("final_letter", final.group(1))
        seen.add(final.group(1))
    if found:
        stated, ruled_out = _standalone_letters(text, grammar)
        if seen & ruled_out:
            raise ValueError("a stated letter is ruled out")  # "The answer is B. No, B is wrong."
        seen |= stated  # "The answer is B. Wait, actually it is C.": a second letter stated
    if len(seen) > 1:
        raise ValueError("several letters")
    return found


def _declared(text: str, grammar: _Grammar) -> str | None:
    """The letter of a last line `ANSWER: B` (the form inspect's multiple_choice() asks for after reasoning; also
    `**Answer: B**`) or of a last line whose one letter is a `\\boxed{B}`, when every ANSWER line and every boxed
    letter of the answer name it: the model's declared answer, whatever letters its reasoning named before ("A is a
    cat, B is a dog.\nANSWER: B"; "The answer is B. Wait, it is C.\nANSWER: C"). None otherwise."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    boxed = [m for m in grammar.boxed.finditer(lines[-1]) if m.group("letter").isupper()]
    if not grammar.answer_line.fullmatch(lines[-1]) and not (
            boxed and not _negated(lines[-1], boxed[0].start(), grammar)
            and not _taken_back(lines[-1], boxed[0].end(), grammar)
            and _standalone_letters(lines[-1], grammar) == ({boxed[0].group("letter")}, set())):
        return None
    stated = {m.group(1).upper() for m in grammar.answer_line.finditer(text)}
    stated |= {m.group("letter") for m in grammar.boxed.finditer(text)}
    return stated.pop() if len(stated) == 1 else None


def parse_choice(text: str, letters: Sequence[str], option_texts: Sequence[str] = (),
                 locale: Locale = ENGLISH) -> Parsed:
    """Parse a generated answer to one presented letter; `option_texts` are the options in presented order, `locale`
    the item's (its forms are read besides the English ones)."""
    grammar = _grammar(locale)
    cleaned = _clean(text)
    parsed = _from_json(cleaned, letters, grammar)
    if parsed:
        return parsed
    declared = _declared(cleaned, grammar)
    if declared:
        return Parsed(declared, "answer_line") if declared in letters else NONE
    if any(not _ruled_out(cleaned, *hedge.span(), grammar) for hedge in grammar.hedge.finditer(cleaned)):
        return NONE  # "A or B"; not "A and C are wrong", "not A or C"
    lone = grammar.lone.match(cleaned)
    if lone:
        return Parsed(lone.group(1), "lone_letter") if lone.group(1) in letters else NONE
    texts = {letter: str(option).strip().lower() for letter, option in zip(letters, option_texts, strict=False)
             if option}
    try:
        found = _prose_letters(cleaned, grammar, texts)
    except ValueError:
        return NONE
    if found:
        form = max(found, key=lambda f: CONFIDENCE[f])
        return Parsed(found[form], form) if found[form] in letters else NONE
    answered = _normalized(grammar.answer_prefix.sub("", cleaned))
    matches = [letter for letter, option in texts.items() if answered == option]
    return Parsed(matches[0], "option_text") if len(matches) == 1 else NONE


def _normalized(answer: str) -> str:
    """An answer as an option's text is compared: less surrounding quotes, bold and a closing period, lower case."""
    return answer.strip().strip(".!*\"' ").strip().lower()


def parse_number(text: str) -> tuple[float | None, str]:
    """Parse a numeric answer (slider position): JSON {"answer": x}, "the answer is x" (one value), or a lone
    number; (None, "none") otherwise."""
    cleaned = _clean(text)
    if cleaned.startswith("{"):
        try:
            data = json.loads(cleaned)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("answer"), int | float | str):
            value = _single_number(str(data["answer"]))
            if value is not None:
                return value, "json"
    matches = list(_NUMBER_IS.finditer(cleaned))
    stated = {_number(m.group(1)) for m in matches}
    if len(stated) == 1 and None not in stated and not any(m.group(2) for m in matches):
        return stated.pop(), "answer_is"
    if matches:
        return None, "none"
    value = _single_number(cleaned)
    return (value, "lone_number") if value is not None else (None, "none")


def _single_number(text: str) -> float | None:
    """The number when `text` is exactly one number (with optional trailing period)."""
    stripped = text.strip().rstrip(".").strip()
    return _number(stripped) if _NUMBER.fullmatch(stripped) else None


def _number(token: str) -> float | None:
    """The value of one `_NUMBER` token (`1,000` = 1000, `3/4` = 0.75); None when not finite or divided by 0."""
    numerator, _, denominator = token.replace(",", "").partition("/")
    if denominator and not float(denominator):
        return None
    value = float(numerator) / float(denominator) if denominator else float(numerator)
    return value if math.isfinite(value) else None
