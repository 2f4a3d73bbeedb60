"""The locales a LEVANTE task is given in, and the languages children answered in: one registry, one lookup.

A locale is LEVANTE's own code (its translation table's column and Crowdin's name: `de`, `es-CO`, `fr-CA`, `nl`,
`de-CH`), written into variant names as its `suffix` (lower case, `-` -> `_`: `levante_trog_de`,
`levante_vocab_es_co`). English is the source locale: the manifest's own text, no suffix.

Children's language tags (a trials `language` column, or runs -> variants `language`: `de-DE`, `es-CO`, `en-US`, ...)
belong to the locale whose `tags` hold them, compared case-insensitively; a bare language subtag (`de`, `es`) belongs
to the locale that lists it. `language` is the ISO 639-1 code that names LEVANTE's `by_language/<language>` IRT
records (vocab and theory-of-mind, calibrated per language).
"""

from __future__ import annotations

from dataclasses import dataclass

from levante_tasks.errors import LevanteError


class LocaleError(LevanteError, ValueError):
    """A locale code or language tag that names no known locale; the message names it and what is accepted."""


@dataclass(frozen=True)
class Locale:
    """One locale: LEVANTE's code, its language (ISO 639-1), the children's language tags it stands for and a
    name for reports."""

    code: str
    language: str
    tags: tuple[str, ...]
    name: str

    @property
    def suffix(self) -> str:
        """The locale's part of a variant name (`de`, `es_co`); the source locale writes none."""
        return "" if self is ENGLISH else self.code.lower().replace("-", "_")

    @property
    def is_source(self) -> bool:
        """Whether this is the manifest's own language (English), which needs no translation."""
        return self is ENGLISH


ENGLISH = Locale("en", "en", ("en", "en-US", "en-CA", "en-GB", "en-GH"), "English")
TRANSLATED = (
    Locale("de", "de", ("de", "de-DE"), "German (Germany)"),
    Locale("es-CO", "es", ("es-CO", "es"), "Spanish (Colombia)"),
    Locale("fr-CA", "fr", ("fr-CA", "fr"), "French (Canada)"),
    Locale("nl", "nl", ("nl", "nl-NL"), "Dutch (Netherlands)"),
    Locale("de-CH", "de", ("de-CH",), "German (Switzerland)"),
)
LOCALES = (ENGLISH, *TRANSLATED)  # report order: the source first, then the translated locales
_BY_CODE = {loc.code.lower(): loc for loc in LOCALES}
_BY_TAG = {tag.lower(): loc for loc in LOCALES for tag in loc.tags}


def accepted() -> str:
    """The accepted locale codes, for messages."""
    return ", ".join(loc.code for loc in LOCALES)


def locale(code: str | None) -> Locale:
    """The locale of a code (`de`, `es-CO`), in any case and with `_` for `-` (`es_co`); None or "" is English.
    LocaleError names anything else, a value that is not text (a damaged record's `["de"]`) too."""
    if not code:
        return ENGLISH
    if not isinstance(code, str):
        raise LocaleError(f"locale {code!r} is not a locale code (text); known: {accepted()}")
    found = _BY_CODE.get(code.strip().lower().replace("_", "-"))
    if found is None:
        raise LocaleError(f"unknown locale {code!r}; known: {accepted()}")
    return found


def of_language_tag(tag: str | None) -> Locale | None:
    """The locale a child's language tag (`de-DE`, `es-CO`, `en-US`, `es`) belongs to; None for an empty tag or
    one no locale lists (counted by the caller, never guessed)."""
    if tag is None:
        return None
    key = tag.strip().replace("_", "-").lower()
    return _BY_TAG.get(key) if key else None
