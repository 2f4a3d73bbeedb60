"""The locale registry (`levante_tasks.schema.locales`): one lookup for LEVANTE's locale codes, the children's
language tags and the by-language record languages; unknown codes are refused in one line, unknown tags are None."""

from __future__ import annotations

import pytest

from levante_tasks.schema.locales import ENGLISH, LOCALES, TRANSLATED, LocaleError, locale, of_language_tag


def test_every_code_and_suffix_spelling_finds_its_locale() -> None:
    for loc in LOCALES:
        assert locale(loc.code) is loc
        assert locale(loc.code.upper()) is loc
        assert locale(loc.suffix or "en") is loc
    assert locale(None) is ENGLISH and locale("") is ENGLISH
    assert [loc.suffix for loc in TRANSLATED] == ["de", "es_co", "fr_ca", "nl", "de_ch"]


@pytest.mark.parametrize("code", ["es", "de-AT", "xx", "es-AR", "en-US"])
def test_an_unknown_code_is_refused_naming_it_and_the_known_ones(code: str) -> None:
    with pytest.raises(LocaleError) as caught:
        locale(code)
    message = str(caught.value)
    assert message.startswith(f"unknown locale {code!r}") and "de, es-CO" in message and "\n" not in message


@pytest.mark.parametrize(("tag", "code"), [("de-DE", "de"), ("de", "de"), ("es-CO", "es-CO"), ("es_co", "es-CO"),
                                           ("es", "es-CO"), ("en-US", "en"), ("EN-ca", "en"), ("de-CH", "de-CH"),
                                           ("nl-NL", "nl"), ("fr-CA", "fr-CA")])
def test_children_language_tags_belong_to_one_locale(tag: str, code: str) -> None:
    assert of_language_tag(tag) is locale(code)


@pytest.mark.parametrize("tag", [None, "", "  ", "es-AR", "pt-BR", "deutsch"])
def test_a_tag_no_locale_lists_is_none_never_a_guess(tag: str | None) -> None:
    assert of_language_tag(tag) is None


def test_each_tag_and_code_names_one_locale_and_by_language_records_use_the_language() -> None:
    tags = [tag.lower() for loc in LOCALES for tag in loc.tags]
    assert len(tags) == len(set(tags))
    assert len({loc.code.lower() for loc in LOCALES}) == len(LOCALES)
    assert {loc.code: loc.language for loc in LOCALES} == {"en": "en", "de": "de", "es-CO": "es", "fr-CA": "fr",
                                                          "nl": "nl", "de-CH": "de"}
