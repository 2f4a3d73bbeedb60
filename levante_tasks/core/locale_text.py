"""Our own words around LEVANTE's item text, per locale: the question frame and the answer instruction.

LEVANTE's translation table gives each item's text (a word, a sentence, a story); the words we add around it (the
frame of a vocab or trog item, "Answer with A or B.", the slider instruction, the yes/no words of per-option
scoring) are ours and live here, one table per locale code (`schema.locales`), each with every key and the same
`{placeholders}` as English. `text(locale, key, **fields)` is the one way to read them.
"""

from __future__ import annotations

from levante_tasks.schema.locales import Locale

# key -> template. `match_text`: the frame of an item whose table text is a word or phrase (vocab, trog);
# `answer_with`: the answer instruction, `{letters}` from `two_letters` / `many_letters` (`{rest}` is "A, B").
TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "match_text": 'Choose the image that matches the text: "{phrase}".',
        "answer_with": "Answer with {letters}.",
        "two_letters": "{first} or {last}",
        "many_letters": "{rest}, or {last}",
        "yes": "Yes",
        "no": "No",
    },
    "de": {
        "match_text": "Wähle das Bild, das zum Text passt: „{phrase}“.",
        "answer_with": "Antworte mit {letters}.",
        "two_letters": "{first} oder {last}",
        "many_letters": "{rest} oder {last}",
        "yes": "Ja",
        "no": "Nein",
    },
    "es-CO": {
        "match_text": "Elige la imagen que corresponde al texto: «{phrase}».",
        "answer_with": "Responde con {letters}.",
        "two_letters": "{first} o {last}",
        "many_letters": "{rest} o {last}",
        "yes": "Sí",
        "no": "No",
    },
    "fr-CA": {
        "match_text": "Choisis l’image qui correspond au texte : « {phrase} ».",
        "answer_with": "Réponds par {letters}.",
        "two_letters": "{first} ou {last}",
        "many_letters": "{rest} ou {last}",
        "yes": "Oui",
        "no": "Non",
    },
    "nl": {
        "match_text": "Kies de afbeelding die bij de tekst past: ‘{phrase}’.",
        "answer_with": "Antwoord met {letters}.",
        "two_letters": "{first} of {last}",
        "many_letters": "{rest} of {last}",
        "yes": "Ja",
        "no": "Nee",
    },
    "de-CH": {
        "match_text": "Wähle das Bild, das zum Text passt: «{phrase}».",
        "answer_with": "Antworte mit {letters}.",
        "two_letters": "{first} oder {last}",
        "many_letters": "{rest} oder {last}",
        "yes": "Ja",
        "no": "Nein",
    },
}


def text(locale: Locale, key: str, **fields: str) -> str:
    """The locale's template `key` with its `{placeholders}` filled (KeyError names a missing locale or key)."""
    return TEXTS[locale.code][key].format(**fields)
