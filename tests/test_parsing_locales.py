"""Answers in the item's locale (core.parsing with core.answer_words): each translated locale's forms are read for
items of that locale, besides the English ones, with the English strictness (one letter, hedges in the locale, a
capital that is a word, French elision); fuzzed on both sides per locale (small, derandomized runs). Records of a
translated item name the locale's grammar in `parser_version` (`4+de.2`), and every harness passes the locale.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from levante_tasks.core import records, reparse
from levante_tasks.core.answer_words import WORDS
from levante_tasks.core.parsing import CONFIDENCE, PARSER_VERSION, grammar_version, parse_choice, version_locale
from levante_tasks.schema.locales import ENGLISH, LOCALES, TRANSLATED, LocaleError, locale

LETTERS = ["A", "B", "C", "D"]
FUZZ = settings(max_examples=150, deadline=None, derandomize=True)
DE, ES, FR, NL, CH = (locale(code) for code in ("de", "es-CO", "fr-CA", "nl", "de-CH"))


@pytest.mark.parametrize(("loc", "text", "letter", "method"), [
    # German (and Swiss German, which writes the same)
    (DE, "Die Antwort ist B", "B", "answer_is"),
    (DE, "Antwort: B", "B", "answer_is"),
    (DE, "Ich wähle B", "B", "i_choose"),
    (DE, "Die richtige Antwort lautet: D.", "D", "answer_is"),
    (DE, "Option C ist richtig.", "C", "option_is"),
    (DE, "B ist die richtige Antwort, weil der Hund links ist.", "B", "option_is"),
    (DE, "Ich würde A wählen.", "A", "i_choose"),
    (DE, "Ich entscheide mich für Bild C.", "C", "i_choose"),
    (DE, "Die Antwort ist „B“.", "B", "answer_is"),
    (DE, "Der Hund ist links.\nAntwort: c", "C", "answer_line"),
    (DE, "Die Antwort ist Hund.", "B", "option_text"),
    (CH, "Die Antwort ist «C».", "C", "answer_is"),
    (CH, "Ich nehme B.", "B", "i_choose"),
    (DE, "B oder C", None, "none"),
    (DE, "Die Antwort ist B oder C.", None, "none"),
    (DE, "Die Antwort ist B bzw. C.", None, "none"),
    (DE, "Die Antwort ist B. Nein, eigentlich C.", None, "none"),
    (DE, "Die Antwort ist B, C.", None, "none"),
    (DE, "Option B ist nicht richtig.", None, "none"),
    (DE, "die antwort ist b", None, "none"),
    (DE, "Ich wähle A weil die Katze klein ist.", None, "none"),  # a bare A before a word, as English "A cat"
    # Spanish (Colombia)
    (ES, "La respuesta es C", "C", "answer_is"),
    (ES, "Respuesta: C", "C", "answer_is"),
    (ES, "Elijo C", "C", "i_choose"),
    (ES, "La respuesta correcta es la D.", "D", "answer_is"),
    (ES, "La opción B es correcta.", "B", "option_is"),
    (ES, "C es la respuesta correcta.", "C", "option_is"),
    (ES, "Elijo la opción A.", "A", "i_choose"),
    (ES, "A la izquierda está el perro. La respuesta es B.", "B", "answer_is"),  # "A" = "to/at", not a letter
    (ES, "La respuesta es «D».", "D", "answer_is"),
    (ES, "La respuesta es perro.", "B", "option_text"),
    (ES, "B o C", None, "none"),
    (ES, "La respuesta es B o C.", None, "none"),
    (ES, "La respuesta es B y C.", None, "none"),
    (ES, "La respuesta es A la izquierda.", None, "none"),
    (ES, "C no es correcta.", None, "none"),
    (ES, "La respuesta es B. Bueno, en realidad C.", None, "none"),
    # French (Canada)
    (FR, "La réponse est C", "C", "answer_is"),
    (FR, "Réponse : C", "C", "answer_is"),
    (FR, "Je choisis C", "C", "i_choose"),
    (FR, "La bonne réponse est B.", "B", "answer_is"),
    (FR, "L’option D est correcte.", "D", "option_is"),
    (FR, "C est la bonne réponse.", "C", "option_is"),
    (FR, "J’opte pour A.", "A", "i_choose"),
    (FR, "Je choisis la B.", "B", "i_choose"),
    (FR, "C’est le chien qui est à gauche. La réponse est B.", "B", "answer_is"),  # C’est: an elided word
    (FR, "D'après l'image, je choisis A.", "A", "i_choose"),
    (FR, "A gauche, il y a un chat. La réponse est D.", "D", "answer_is"),  # "A" = "à"
    (FR, "La réponse est « C ».", "C", "answer_is"),
    (FR, "B ou C", None, "none"),
    (FR, "La réponse est B ou C.", None, "none"),
    (FR, "La réponse est B et C.", None, "none"),
    (FR, "La réponse est B. En fait, C.", None, "none"),
    (FR, "La réponse est A gauche.", None, "none"),
    # Dutch
    (NL, "Het antwoord is B", "B", "answer_is"),
    (NL, "Antwoord: B", "B", "answer_is"),
    (NL, "Ik kies B", "B", "i_choose"),
    (NL, "Ik kies voor optie C.", "C", "i_choose"),
    (NL, "Ik zou D kiezen.", "D", "i_choose"),
    (NL, "B is het juiste antwoord.", "B", "option_is"),
    (NL, "Optie A is correct.", "A", "option_is"),
    (NL, "B of C", None, "none"),
    (NL, "Het antwoord is B of C.", None, "none"),
    (NL, "B en C zijn fout. Het antwoord is A.", None, "none"),
    (NL, "Het antwoord is B. Nee, eigenlijk C.", None, "none"),
    # parser version 4: an option named alone as a sentence, an answer with another option ruled out
    (DE, "Auswahl C.", "C", "option_is"),
    (DE, "Die Antwort ist B, nicht C.", "B", "answer_is"),
    (ES, "Opción B.", "B", "option_is"),
    (ES, "La respuesta es B, no C.", "B", "answer_is"),
    (FR, "Choix D.", "D", "option_is"),
    (FR, "La réponse est B, pas C.", "B", "answer_is"),
    (NL, "Optie C.", "C", "option_is"),
    (NL, "Het antwoord is B, niet C.", "B", "answer_is"),
    # negations and eliminations in the locale's words: not read
    (DE, "Die falsche Antwort ist C.", None, "none"),
    (DE, "Die unwahrscheinlichste Antwort ist D.", None, "none"),
    (DE, "Nicht: D", None, "none"),
    (DE, "Ausgeschlossen: A", None, "none"),
    (CH, "Die am wenigsten wahrscheinliche Antwort ist D.", None, "none"),
    (ES, "No es la respuesta: C", None, "none"),
    (ES, "Descartada: A", None, "none"),
    (ES, "Opción B. No, en realidad C.", None, "none"),
    (FR, "La mauvaise réponse est C.", None, "none"),
    (FR, "Ce n’est pas la réponse : C", None, "none"),
    (FR, "Éliminée : C", None, "none"),
    (NL, "Het foute antwoord is C.", None, "none"),
    (NL, "Het minst waarschijnlijke antwoord is D.", None, "none"),
    (NL, "Niet: D", None, "none"),
    (NL, "Uitgesloten: A", None, "none"),
    # a letter negated after it (German and Dutch put "nicht" / "niet" after the object), a form taken back by a
    # word referring to it
    (DE, "Ich wähle B nicht.", None, "none"),
    (CH, "Ich nehme B nicht.", None, "none"),
    (NL, "Ik kies B niet.", None, "none"),
    (DE, "Die Antwort ist B, aber das ist falsch.", None, "none"),
    (ES, "La respuesta es B, pero es incorrecta.", None, "none"),
    (FR, "La réponse est B, mais c'est faux.", None, "none"),
    (NL, "Het antwoord is B, maar dat is fout.", None, "none"),
    (DE, "Ich wähle B, nicht C.", "B", "i_choose"),
    (NL, "Ik kies B. Dat is juist.", "B", "i_choose"),
])
def test_locale_forms(loc, text: str, letter: str | None, method: str) -> None:
    parsed = parse_choice(text, LETTERS, ["Katze", "Hund", "Vogel", "Fisch"] if loc.language == "de"
                          else ["gato", "perro", "pájaro", "pez"], loc)
    assert (parsed.letter, parsed.method) == (letter, method)


ENGLISH_READS = ["The answer is B.", "Answer: (B)", "Option B is correct.", "I pick (B).", "B", '{"answer": "B"}',
                 "The dog is bigger.\nANSWER: B", "Option B.", r"\boxed{B}", "A is a cat.\n**Answer: B**",
                 "The answer is B. Option A is wrong."]


@pytest.mark.parametrize("loc", TRANSLATED)
@pytest.mark.parametrize("text", ENGLISH_READS)
def test_english_forms_are_read_in_every_locale(loc, text: str) -> None:
    assert parse_choice(text, LETTERS, (), loc).letter == parse_choice(text, LETTERS).letter == "B"


OWN_FORMS = {DE: "Die Antwort ist B.", ES: "La respuesta es B.", FR: "Je choisis B.", NL: "Ik kies B.",
             CH: "Ich wähle B."}


@pytest.mark.parametrize("loc", OWN_FORMS)
def test_a_locale_form_is_read_only_for_items_of_that_locale(loc) -> None:
    assert parse_choice(OWN_FORMS[loc], LETTERS, (), loc).letter == "B"
    others = [other for other in LOCALES if other.language != loc.language]
    assert [parse_choice(OWN_FORMS[loc], LETTERS, (), other).letter for other in others] == [None] * len(others)


# ---- fuzzing, per locale -------------------------------------------------------------------------------------------
# Prose that cannot itself be an answer in its language: capitalised words (their first letter is no answer), a
# capital that is a word before another word (Spanish/French "A"), French elisions, no form word, no hedge word.
PROSE_WORDS = {
    "de": ["Hund", "Katze", "Bild", "Das", "Die", "Über", "Ähnlich", "groß", "links", "Baum", "Eule", "Haus", "Farbe"],
    "es": ["perro", "Gato", "El", "Árbol", "azul", "Casa", "izquierda", "Niño", "A la izquierda", "pequeño", "Dos"],
    "fr": ["chien", "Chat", "Le", "Les", "C’est", "D’après", "L’image", "gauche", "Arbre", "Bleu", "A gauche", "Deux"],
    "nl": ["hond", "Kat", "De", "Het", "Boom", "links", "Blauw", "Huis", "Een", "Daarom", "Beide"],
}
# (template, where, form): `any` between two sentences of prose, `start` opening the answer, `end` closing it
FORMS = {
    "de": [("Die Antwort ist {X}.", "any", "answer_is"), ("Antwort: ({X})", "any", "answer_is"),
           ("Die richtige Antwort lautet **{X}**.", "any", "answer_is"), ("Die Antwort ist „{X}“.", "any", "answer_is"),
           ("Option {X} ist richtig.", "any", "option_is"), ("{X} ist die richtige Antwort.", "start", "option_is"),
           ("Ich wähle ({X}).", "any", "i_choose"), ("Ich würde {X} wählen.", "any", "i_choose"),
           ("\nAntwort: {x}", "end", "answer_line"), ("Auswahl {X}.", "any", "option_is")],
    "es": [("La respuesta es {X}.", "any", "answer_is"), ("Respuesta: ({X})", "any", "answer_is"),
           ("La respuesta correcta es la {X}.", "any", "answer_is"), ("La respuesta es «{X}».", "any", "answer_is"),
           ("La opción {X} es correcta.", "any", "option_is"), ("{X} es la respuesta correcta.", "start", "option_is"),
           ("Elijo ({X}).", "any", "i_choose"), ("Elijo la opción {X}.", "any", "i_choose"),
           ("\nRespuesta: {x}", "end", "answer_line"), ("Opción {X}.", "any", "option_is")],
    "fr": [("La réponse est {X}.", "any", "answer_is"), ("Réponse : ({X})", "any", "answer_is"),
           ("La bonne réponse est **{X}**.", "any", "answer_is"), ("La réponse est « {X} ».", "any", "answer_is"),
           ("L’option {X} est correcte.", "any", "option_is"), ("{X} est la bonne réponse.", "start", "option_is"),
           ("Je choisis ({X}).", "any", "i_choose"), ("J’opte pour {X}.", "any", "i_choose"),
           ("\nRéponse : {x}", "end", "answer_line"), ("Choix {X}.", "any", "option_is")],
    "nl": [("Het antwoord is {X}.", "any", "answer_is"), ("Antwoord: ({X})", "any", "answer_is"),
           ("Het juiste antwoord is **{X}**.", "any", "answer_is"), ("Het antwoord is ‘{X}’.", "any", "answer_is"),
           ("Optie {X} is correct.", "any", "option_is"), ("{X} is het juiste antwoord.", "start", "option_is"),
           ("Ik kies ({X}).", "any", "i_choose"), ("Ik zou {X} kiezen.", "any", "i_choose"),
           ("\nAntwoord: {x}", "end", "answer_line"), ("Optie {X}.", "any", "option_is")],
}
# per language: "the answer is", its hedge words, and what a self-correction says before the second letter
NEAR = {"de": ("Die Antwort ist", ("oder", "und", "bzw."), "nein, eigentlich"),
        "es": ("La respuesta es", ("o", "y"), "bueno, en realidad"),
        "fr": ("La réponse est", ("ou", "et"), "en fait, c’est plutôt"),
        "nl": ("Het antwoord is", ("of", "en"), "nee, eigenlijk")}
LOCALE_OF = {"de": DE, "es": ES, "fr": FR, "nl": NL}
# per language: a negated form, an eliminated or excluded letter, a `<word>: X` line (English ones are read too)
NEGATED = {"de": ["Die falsche Antwort ist {x}.", "Die unwahrscheinlichste Antwort ist {x}.", "Nicht: {x}",
                  "Ausgeschlossen: {x}", "Die Antwort ist nicht {x}.", "Option {x} ist falsch.",
                  "Die am wenigsten wahrscheinliche Antwort ist {x}."],
           "es": ["No es la respuesta: {x}", "Descartada: {x}", "La respuesta no es {x}.",
                  "La respuesta incorrecta es {x}.", "Todas excepto la {x}.", "Incorrecta: {x}"],
           "fr": ["La mauvaise réponse est {x}.", "Ce n’est pas la réponse : {x}", "Éliminée : {x}",
                  "La réponse n’est pas {x}.", "Toutes sauf {x}.", "La fausse réponse est {x}."],
           "nl": ["Het foute antwoord is {x}.", "Het minst waarschijnlijke antwoord is {x}.", "Niet: {x}",
                  "Uitgesloten: {x}", "Het antwoord is niet {x}.", "Het onjuiste antwoord is {x}."]}


def _embed(template: str, where: str, letter: str, before: str, after: str) -> str:
    form = template.format(X=letter, x=letter.lower())
    if where == "start":
        return f"{form} {after}".strip()
    if where == "end":
        return f"{before}.{form}" if before else form.strip()
    return f"{before}. {form} {after}".strip(" ")


def _prose(language: str) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(PROSE_WORDS[language]), max_size=8).map(" ".join)


@FUZZ
@given(st.sampled_from(sorted(FORMS)), st.integers(2, 8), st.data())
def test_fuzz_every_locale_form_in_its_prose_reads_its_letter(language: str, n: int, data) -> None:
    letters = list("ABCDEFGH"[:n])
    letter = data.draw(st.sampled_from(letters))
    template, where, name = data.draw(st.sampled_from(FORMS[language]))
    before, after = data.draw(_prose(language)), data.draw(_prose(language))
    text = _embed(template, where, letter, before, after)
    parsed = parse_choice(text, letters, (), LOCALE_OF[language])
    assert parsed.letter == letter, text
    assert parsed.method in ((name, "lone_letter") if name != "answer_line" else ("answer_is", "answer_line")), text
    assert parsed.confidence == CONFIDENCE[parsed.method]


@FUZZ
@given(st.sampled_from(sorted(FORMS)), st.integers(2, 8), st.data())
def test_fuzz_locale_near_misses_stay_unparsed(language: str, n: int, data) -> None:
    """Two forms naming different letters, a form and a self-correction, a letter beyond the options, a bare A
    before a word, a lower-case prose letter, a hedge in the locale's words, two letters, a negated form or ruled-out
    letter in the locale's words or English: all unparsed."""
    letters = list("ABCDEFGH"[:n])
    x, y = data.draw(st.lists(st.sampled_from(letters), min_size=2, max_size=2, unique=True))
    first = data.draw(st.sampled_from([f for f in FORMS[language] if f[1] != "end"]))
    second = data.draw(st.sampled_from([f for f in FORMS[language] if f[2] != "answer_line"]))
    prose = data.draw(_prose(language))
    outside = "ABCDEFGH"[n] if n < 8 else "Z"
    answer_is, hedges, correction = NEAR[language]
    hedge = data.draw(st.sampled_from(hedges))
    negated = data.draw(st.sampled_from(NEGATED[language] + ["The incorrect answer is {x}.", "Eliminated: {x}"]))
    texts = [
        _embed(first[0], first[1], x, prose, "") + ". " + _embed(second[0], "any", y, prose, ""),
        _embed(first[0], first[1], x, prose, "") + f" {prose}, {correction} {y}.",
        _embed(first[0], first[1], outside, prose, prose),
        f"{prose}. {answer_is} A {PROSE_WORDS[language][0]} {prose}.",
        f"{prose}. {answer_is.lower()} {x.lower()}.",
        f"{prose}. {answer_is} {x} {hedge} {y}.",
        f"{prose}. {answer_is} {x}, {y}.",
        negated.format(x=x),
        f"{prose}. " + negated.format(x=x),
        f"{prose}.\n" + negated.format(x=x),
    ]
    for text in texts:
        assert parse_choice(text, letters, (), LOCALE_OF[language]).method == "none", text


# ---- the grammar's version in records, and every caller passing the locale ----------------------------------------

def test_parser_version_names_the_locale_grammar_only_for_translated_items() -> None:
    assert grammar_version(ENGLISH) == PARSER_VERSION == "4"
    assert {loc.code: grammar_version(loc) for loc in TRANSLATED} == {
        loc.code: f"4+{loc.code}.{WORDS[loc.code].version}" for loc in TRANSLATED}
    assert {words.version for words in WORDS.values()} == {"2"}  # the negations of parser version 4 in every locale
    assert all(version_locale(grammar_version(loc)) is loc for loc in LOCALES)
    assert version_locale("3+de.1") is DE  # a record of an older grammar still names its locale
    with pytest.raises(LocaleError):
        version_locale("3+xx.1")


def _doc(code: str | None) -> dict[str, Any]:
    doc = {"item_uid": "u1", "task": "trog", "trial_type": "t", "seed": 0, "variant": "original",
           "presented_order": [1, 0, 2, 3], "letters": LETTERS, "option_kind": "text", "response_format": "choice",
           "options": ["dog", "cat", "bird", "fish"]}
    return doc | ({"locale": code} if code else {})


def test_lmms_process_results_reads_the_docs_locale() -> None:
    from levante_tasks.lmms.task import process_results

    english = process_results(_doc(None), ["Die Antwort ist B."])["levante_item"]
    german = process_results(_doc("de"), ["Die Antwort ist B."])["levante_item"]
    assert (english["choice_letter"], english["parser_version"]) == (None, "4")
    assert (german["choice_letter"], german["choice_index"], german["correct"]) == ("B", 0, 1)
    assert (german["parse_method"], german["parser_version"]) == ("answer_is", "4+de.2")
    assert "locale" not in english and "locale" not in german  # the record's keys are English's


def test_reparse_reads_the_locale_its_parser_version_names() -> None:
    doc = _doc("es-CO")
    saved = records.choice_record(doc, parse_choice("x", LETTERS), option_texts=["cat", "dog", "bird", "fish"])
    assert saved["parser_version"] == "4+es-CO.2"
    fresh = reparse.reparse(saved, ["La respuesta es la B."])
    assert (fresh["choice_letter"], fresh["parse_method"], fresh["parser_version"]) == ("B", "answer_is", "4+es-CO.2")
    assert reparse.reparse(saved | {"parser_version": "3"}, ["La respuesta es la B."])["choice_letter"] is None
    older = saved | {"parser_version": "3+es-CO.0"}
    assert reparse.disagreement(older, ["La respuesta es la B."]).startswith(
        "recorded by parser version 3+es-CO.0 as None by none, correct 0; parser version 4+es-CO.2 reads")
    with pytest.raises(reparse.NotReparsable, match="names no known locale"):
        reparse.record_doc(saved | {"parser_version": "3+xx.1"})


def test_reparse_parses_again_for_other_option_texts_and_takes_unhashable_ones() -> None:
    """The memo of parse_choice that verify relies on is keyed by the option texts too (the same response reads
    as another letter), and an option text that cannot be a key (a hand-edited record) is parsed without it."""
    saved = records.choice_record(_doc(None), parse_choice("x", LETTERS), option_texts=["cat", "dog", "bird", "fish"])
    assert reparse.reparse(saved, ["dog"])["choice_letter"] == "B"
    assert reparse.reparse(saved | {"option_texts": ["dog", "cat", "bird", "fish"]}, ["dog"])["choice_letter"] == "A"
    edited = reparse.reparse(saved | {"option_texts": [["dog"], "cat", "bird", "fish"]}, ["cat"])
    assert (edited["choice_letter"], edited["option_texts"]) == ("B", ["['dog']", "cat", "bird", "fish"])


def test_reparse_of_number_option_texts_does_not_depend_on_what_was_parsed_before() -> None:
    """A hand-edited record's option texts may be numbers: 1 and 1.0 are one key of a dict (equal, same hash) but
    read differently ("1.0" names option 1.0, not option 1), so the memo must not hand one the other's reading."""
    saved = records.choice_record(_doc(None), parse_choice("x", LETTERS), option_texts=["cat", "dog", "bird", "fish"])
    ints, floats = saved | {"option_texts": [1, 2, 3, 4]}, saved | {"option_texts": [1.0, 2.0, 3.0, 4.0]}
    letters = [reparse.reparse(r, ["The answer is 1.0"])["choice_letter"] for r in (ints, floats, ints, floats)]
    assert letters == [None, "A", None, "A"]


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from levante_tasks.testing.fixture_data import write_fixture

    root = tmp_path_factory.mktemp("levante-data")
    write_fixture(root)
    return root


def test_inspect_sample_and_scorer_read_the_docs_locale(fixture_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from levante_tasks.core import docs
    from levante_tasks.inspect.samples import doc_sample
    from levante_tasks.inspect.scorer import levante_record

    monkeypatch.setenv("LEVANTE_DATA_DIR", str(fixture_dir))
    monkeypatch.delenv("LEVANTE_DATA_VERSION", raising=False)
    doc = docs.task_docs("vocab", seed=0, variant="original", choice_only=True)[0]
    english = doc_sample(doc)
    german = doc_sample(doc | {"locale": "de"})
    assert "locale" not in english.metadata and german.metadata["locale"] == "de"
    assert "(Angehängte Bilder in dieser Reihenfolge: <image 1>" in german.input[0].content[0].text
    score = levante_record()

    def scored(sample) -> dict[str, Any]:
        output = SimpleNamespace(metadata=None, completion=f"Die Antwort ist {doc['target_letter']}.")
        return asyncio.run(score(SimpleNamespace(metadata=sample.metadata, output=output), None)).metadata[
            "levante_item"]

    assert (scored(english)["choice_letter"], scored(english)["parser_version"]) == (None, "4")
    assert (scored(german)["choice_letter"], scored(german)["correct"]) == (doc["target_letter"], 1)
