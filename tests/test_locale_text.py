"""Our words per locale (core.locale_text): every locale has every template with English's placeholders, balanced
quotes and brackets, real diacritics (no ASCII fallbacks such as "Wahle"), the inspect protocol line kept; and a
pseudo-locale (English with every letter accented and every template bracketed) rendered through compose, the
inspect sample and the yes/no pass leaves no English and no unfilled placeholder.

Each check is a function returning its problems; `test_each_check_finds_its_broken_template` breaks one template per
check and shows the check reports it.
"""

from __future__ import annotations

import copy
import re
import string
from collections.abc import Callable
from typing import Any

import pytest

from levante_tasks.core import hooks, locale_text, prompts
from levante_tasks.core.locale_text import TEXTS
from levante_tasks.schema import locales
from levante_tasks.schema.locales import LOCALES, Locale

Table = dict[str, dict[str, str]]
LANGUAGE = {loc.code: loc.language for loc in LOCALES}

# An opening mark -> its closing mark. A straight quote closes itself; `“` and `‘` open in English and Dutch and
# close German `„…“` and `‚…‘` (a closer that ends the innermost open pair is read as closing it first).
PAIRS = {"(": ")", "[": "]", "„": "“", "‚": "‘", "“": "”", "‘": "’", "«": "»", "¿": "?", "¡": "!", '"': '"', "'": "'"}
CLOSERS = {")", "]", "”", "’", "»"}  # never an opening mark: one with nothing open to close is unbalanced
# Spellings without their diacritics (whole words, any case) that must not appear, per language; Spanish "si" is
# "if": the yes word is "sí".
ASCII_FALLBACKS = {
    "de": ("wahle", "waehle", "fur", "fuer", "uber", "ueber", "moglich", "moeglich", "angehangt", "angehaengt",
           "anfuhrungszeichen", "anfuehrungszeichen", "naechste", "nachste"),
    "es": ("si", "numero", "numerica", "linea", "ultima", "unica", "opcion", "eleccion", "imagenes"),
    "fr": ("reponds", "reponse", "repondre", "derniere", "premiere", "extremite", "designe", "etre", "deja",
           "numero", "numerique", "selectionne", "a gauche", "a droite"),
    "nl": ("ideeen", "geinspireerd", "beeindig", "categorieen", "reeel"),
}
MOJIBAKE = ("Ã", "Â", "â€", "\ufffd")  # UTF-8 read as Latin-1 or cp1252, and the replacement character
NEEDS_DIACRITICS = ("de", "es", "fr")  # languages whose table cannot be written in ASCII alone
PROTOCOL = {"mc_template": "'ANSWER: $LETTER'"}  # text inspect's choice() reads: the same in every locale


def placeholders(template: str) -> set[str]:
    """The `{field}` names of a template."""
    return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}


def key_problems(texts: Table) -> list[str]:
    """Locales without a table, and tables whose keys or placeholders differ from English's."""
    english = texts["en"]
    problems = [f"{loc.code}: no table" for loc in LOCALES if loc.code not in texts]
    for code, table in texts.items():
        problems += [f"{code}: missing key {key}" for key in sorted(set(english) - set(table))]
        problems += [f"{code}: extra key {key}" for key in sorted(set(table) - set(english))]
        problems += [f"{code}.{key}: placeholders {sorted(placeholders(table[key]))} != English's "
                     f"{sorted(placeholders(english[key]))}" for key in sorted(set(english) & set(table))
                     if placeholders(table[key]) != placeholders(english[key])]
    return problems


def _apostrophe(template: str, i: int) -> bool:
    """A `'` or `’` between two letters is an apostrophe (l’image), not a quotation mark."""
    return 0 < i < len(template) - 1 and template[i - 1].isalpha() and template[i + 1].isalpha()


def unbalanced(template: str, language: str) -> str | None:
    """Why a template's quotes and brackets are unbalanced (None when balanced); in Spanish every `?`/`!` closes a
    `¿`/`¡`."""
    stack: list[str] = []
    for i, mark in enumerate(template):
        if mark in "'’" and _apostrophe(template, i):
            continue
        if stack and mark == stack[-1]:
            stack.pop()
        elif mark in PAIRS:
            stack.append(PAIRS[mark])
        elif mark in CLOSERS:
            return f"{mark!r} closes nothing at {i}"
    if stack:
        return f"{stack[-1]!r} never closed"
    if language == "es" and (template.count("?") != template.count("¿") or template.count("!") != template.count("¡")):
        return "a ? or ! without its ¿ or ¡"
    return None


def mark_problems(texts: Table) -> list[str]:
    """The templates with unbalanced quotes or brackets."""
    return [f"{code}.{key}: {why}" for code, table in texts.items() for key, template in table.items()
            if (why := unbalanced(template, LANGUAGE.get(code, "")))]


def diacritic_problems(texts: Table) -> list[str]:
    """ASCII fallbacks of the locale's language, mojibake, and a table of a language with diacritics in ASCII alone."""
    problems = []
    for code, table in texts.items():
        language = LANGUAGE.get(code, "")
        for key, template in table.items():
            problems += [f"{code}.{key}: ASCII fallback {word!r}" for word in ASCII_FALLBACKS.get(language, ())
                         if re.search(rf"(?<!\w){word}(?!\w)", template, re.IGNORECASE)]
            problems += [f"{code}.{key}: mojibake {bad!r}" for bad in MOJIBAKE if bad in template]
        if language in NEEDS_DIACRITICS and "".join(table.values()).isascii():
            problems.append(f"{code}: no letter with a diacritic in the whole table")
    return problems


def protocol_problems(texts: Table) -> list[str]:
    """Templates that lost the text another program reads (inspect's `ANSWER: $LETTER`)."""
    return [f"{code}.{key}: lost {kept!r}" for code, table in texts.items() for key, kept in PROTOCOL.items()
            if kept not in table.get(key, kept)]


CHECKS: dict[str, Callable[[Table], list[str]]] = {
    "keys": key_problems, "marks": mark_problems, "diacritics": diacritic_problems, "protocol": protocol_problems}


@pytest.mark.parametrize("check", CHECKS)
def test_every_locale_passes(check: str) -> None:
    assert CHECKS[check](TEXTS) == []


def _drop(code: str, key: str) -> Callable[[Table], None]:
    return lambda texts: texts[code].pop(key)


def _set(code: str, key: str, value: str) -> Callable[[Table], None]:
    return lambda texts: texts[code].__setitem__(key, value)


BROKEN = [  # (check, how the table is broken, what the check must report)
    ("keys", _drop("de", "yes"), "de: missing key yes"),
    ("keys", _set("es-CO", "extra", "x"), "es-CO: extra key extra"),
    ("keys", _set("fr-CA", "answer_with", "Réponds par {lettres}."), "fr-CA.answer_with: placeholders ['lettres']"),
    ("keys", lambda texts: texts.pop("nl"), "nl: no table"),
    ("marks", _set("de", "match_text", "Wähle das Bild, das zum Text passt: „{phrase}."), "de.match_text: '“' never"),
    ("marks", _set("es-CO", "yes_no_text", "Opción: {option}\nEs esta la respuesta? Responde {yes} o {no}."),
     "es-CO.yes_no_text: a ? or ! without its ¿ or ¡"),
    ("marks", _set("nl", "pictures_attached", "Bijgevoegde afbeeldingen: {pictures}.)"), "nl.pictures_attached: ')'"),
    ("marks", _set("fr-CA", "match_text", "Choisis l’image : « {phrase} »»."), "fr-CA.match_text: '»' closes"),
    ("diacritics", _set("de", "match_text", "Wahle das Bild, das zum Text passt: „{phrase}“."),
     "de.match_text: ASCII fallback 'wahle'"),
    ("diacritics", _set("de-CH", "yes_no_text", "Vorschlag: {option}\nIst das die Antwort fuer dich? {yes} {no}"),
     "de-CH.yes_no_text: ASCII fallback 'fuer'"),
    ("diacritics", _set("fr-CA", "answer_with", "Reponds par {letters}."), "fr-CA.answer_with: ASCII fallback"),
    ("diacritics", _set("es-CO", "yes", "Si"), "es-CO.yes: ASCII fallback 'si'"),
    ("diacritics", _set("de", "answer_with", "WÃ¤hle {letters}."), "de.answer_with: mojibake 'Ã'"),
    ("diacritics", lambda texts: texts.__setitem__("es-CO", {k: v.encode("ascii", "ignore").decode()
                                                              for k, v in texts["es-CO"].items()}),
     "es-CO: no letter with a diacritic"),
    ("protocol", _set("nl", "mc_template", "{question}\n\n{choices}\n\n'ANTWOORD: $LETTER' ({letters})"),
     "nl.mc_template: lost"),
]


@pytest.mark.parametrize(("check", "breaking", "reported"), BROKEN)
def test_each_check_finds_its_broken_template(check: str, breaking: Callable[[Table], None], reported: str) -> None:
    texts = copy.deepcopy(TEXTS)
    breaking(texts)
    problems = CHECKS[check](texts)
    assert any(reported in problem for problem in problems), problems


# ---- the pseudo-locale: every piece of our text comes from the table ------------------------------------------------

ASCII = string.ascii_lowercase + string.ascii_uppercase
ACCENTED = "åƀçđéƒĝĥîĵķĺɱñöþǫŕšţûṽŵẋýžÅƁÇĐÉƑĜĤÎĴĶĹṀÑÖÞǪŔŠŢÛṼŴẊÝŽ"
PSEUDO = Locale("en-XA", "en", ("en-XA",), "Pseudo-English")


def pseudo(template: str) -> str:
    """English with every letter outside `{placeholders}` accented, the whole template in `[ ]`."""
    pieces = re.split(r"(\{\w+\})", template)
    return "[" + "".join(p if p.startswith("{") else p.translate(str.maketrans(ASCII, ACCENTED)) for p in pieces) + "]"


@pytest.fixture
def pseudo_locale(monkeypatch: pytest.MonkeyPatch) -> Locale:
    """The pseudo-locale, known to the registry and to the table for this test."""
    monkeypatch.setitem(TEXTS, PSEUDO.code, {key: pseudo(value) for key, value in TEXTS["en"].items()})
    monkeypatch.setitem(locales._BY_CODE, PSEUDO.code.lower(), PSEUDO)
    return PSEUDO


QUESTION = "Ǫûéšţîöñ ţéẋţ."  # the item's own text (the translation table's): not ours, left out of the check


def item(n: int, kind: str, context: bool) -> dict[str, Any]:
    """A prepared choice doc of the pseudo-locale: n options of `kind`, with or without a context picture."""
    return {"question": (f"{prompts.image_marker(1)} " if context else "") + QUESTION, "response_format": "choice",
            "n_options": n, "option_kind": kind, "stimulus_image": "ctx.png" if context else "",
            "options": [f"{k}{k}" for k in range(n)], "presented_order": list(range(n))[::-1], "locale": PSEUDO.code}


def leftover_english(ours: str) -> str:
    """What of our text is not the pseudo-locale's: ASCII letters left after the picture markers and the option
    letters standing alone (the placeholders' values) are taken out."""
    rest = prompts.IMAGE_MARKER.sub(" ", ours)
    return re.sub(r"[^A-Za-z]|(?<![A-Za-z])[A-H](?![A-Za-z])", "", rest)


def assert_all_ours_pseudo(ours: str, pieces: int) -> None:
    """No English left, no placeholder unfilled, and `pieces` templates used (each opens one `[`)."""
    assert leftover_english(ours) == "", ours
    assert "{" not in ours and "}" not in ours, ours
    assert ours.count("[") == pieces, ours


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("kind", ["image", "text"])
@pytest.mark.parametrize("context", [False, True])
def test_pseudo_locale_choice_items_compose_from_the_table(pseudo_locale: Locale, n: int, kind: str,
                                                           context: bool) -> None:
    doc = item(n, kind, context)
    shown = hooks.item_text(doc)
    assert shown.startswith(doc["question"] + " ")
    clause = shown[len(doc["question"]) + 1:]
    # answer_with + its letters phrase, n listing entries and n - 1 separators
    assert_all_ours_pseudo(clause, 2 + n + n - 1)
    assert re.findall(r"(?<![A-Za-z])[A-H](?![A-Za-z])", clause) == list("ABCDEFGH"[:n]) * 2  # phrase, then listing
    first = 2 if context else 1
    listed = ([prompts.image_marker(first + k) for k in range(n)] if kind == "image"
              else [f"{k}{k}" for k in range(n)][::-1])
    assert [part for part in listed if part in clause] == listed  # every option filled in, in presented order
    assert hooks.item_text(doc, with_clause=False) == doc["question"]


def test_pseudo_locale_slider_and_inspect_text_come_from_the_table(pseudo_locale: Locale) -> None:
    from levante_tasks.inspect.samples import question_text, template

    slider = {"question": prompts.slider_question(0, 10, "3", pseudo_locale), "response_format": "slider",
              "locale": PSEUDO.code}
    composed = prompts.compose(slider)
    assert_all_ours_pseudo(composed, 2)
    assert re.findall(r"\d+", composed) == ["1", "0", "10", "3", "0", "1", "0", "1"]  # <image 1>, 0, 10, 3, then 0/1
    doc = item(4, "image", True)
    assert_all_ours_pseudo(question_text(doc, 5)[len(doc["question"]):], 1)
    filled = template(pseudo_locale).format(question="", choices="", letters="A,B")
    assert_all_ours_pseudo(filled, 1)


def test_pseudo_locale_yes_no_pass_comes_from_the_table(pseudo_locale: Locale) -> None:
    pytest.importorskip("torch")
    from levante_adapters.vlm_mc import yes_no_context, yes_no_words

    assert yes_no_words(pseudo_locale) == ("[Ýéš]", "[Ñö]")
    picture, n_images = yes_no_context("STEM", None, True, pseudo_locale)
    assert (picture.split("\n", 1)[0], n_images) == ("STEM", 2)
    assert_all_ours_pseudo(picture.split("\n", 1)[1], 3)  # the question and its two words
    text, n_images = yes_no_context("STEM", "OPTION", False, pseudo_locale)
    assert n_images == 0 and "OPTION" in text
    assert_all_ours_pseudo(text.split("\n", 1)[1].replace("OPTION", ""), 3)


def test_english_is_the_table_english_and_a_translated_item_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """The English clause reads as it always has; a German item's clause is German (core.locale_text `de`)."""
    doc = item(2, "image", True) | {"locale": None}
    assert prompts.item_answer_clause(doc) == "Answer with A or B. A: <image 2>; B: <image 3>"
    assert prompts.item_answer_clause(item(3, "text", False) | {"locale": None}) == (
        "Answer with A, B, or C. A: <option1>; B: <option2>; C: <option3>")
    assert prompts.item_answer_clause(doc | {"locale": "de"}) == "Antworte mit A oder B. A: <image 2>; B: <image 3>"
    assert prompts.item_answer_clause(item(3, "text", False) | {"locale": "es-CO"}) == (
        "Responde con A, B o C. A: <option1>; B: <option2>; C: <option3>")
    assert locale_text.item_locale({"locale": "fr-CA"}).code == "fr-CA"


def test_swiss_german_writes_no_sharp_s_and_guillemets() -> None:
    """de-CH is Germany's words in Swiss spelling: ss for ß (so none may appear) and « » around the phrase."""
    from levante_tasks.core.locale_text import TEXTS

    assert not any("ß" in template for template in TEXTS["de-CH"].values())
    assert "«{phrase}»" in TEXTS["de-CH"]["match_text"]
