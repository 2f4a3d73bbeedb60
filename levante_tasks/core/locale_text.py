"""Our own words around LEVANTE's item text, per locale: the question frame and the answer instruction.

LEVANTE's translation table gives each item's text (a word, a sentence, a story); the words we add around it (the
frame of a vocab or trog item, "Answer with A or B.", the option listing, the slider question and instruction, the
per-option yes/no question and its yes/no words, inspect's multiple-choice instruction and picture line) are ours
and live here, one table per locale code (`schema.locales`), each with every key and the same `{placeholders}` as
English (tests/test_locale_text.py checks that, balanced quotes and brackets, real diacritics and a pseudo-locale
render). `text(locale, key, **fields)` is the one way to read them; `item_locale(item)` is an item's locale (its
`locale` code; English when it has none). inspect's `ANSWER: $LETTER` line stays English in every locale: its
`choice()` scorer reads that keyword.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from levante_tasks.schema.locales import Locale, locale

# key -> template. `match_text`: the frame of an item whose table text is a word or phrase (vocab, trog);
# `answer_with`: the answer instruction, `{letters}` from `two_letters` / `many_letters` (`{rest}` is "A, B");
# `answer_cue`: what a multiple_choice context ends with (lmms-eval's `post_prompt`, before the scored letter);
# `option_entry` / `option_separator`: the option listing after it (`A: <image 2>; B: <image 3>`); `slider_*`: the
# number-line item; `yes_no_*`: one pass of per-option yes/no scoring, `yes` / `no` its next-token words;
# `pictures_attached` / `mc_template`: inspect's picture line and multiple_choice() template.
TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "match_text": 'Choose the image that matches the text: "{phrase}".',
        "answer_with": "Answer with {letters}.",
        "answer_cue": "Answer:",
        "two_letters": "{first} or {last}",
        "many_letters": "{rest}, or {last}",
        "option_entry": "{letter}: {option}",
        "option_separator": "; ",
        "slider_question": "{image} This number line goes from {low} on the left to {high} on the right. "
                           "Where does the number {target} go?",
        "slider_clause": "Answer with a single number between 0 and 1: 0 means the left end and 1 means the right "
                         "end.",
        "yes": "Yes",
        "no": "No",
        "yes_no_picture": "Candidate: {picture}\nIs this picture the answer? Answer {yes} or {no}.",
        "yes_no_text": "Candidate: {option}\nIs this the answer? Answer {yes} or {no}.",
        "pictures_attached": "(Pictures attached in this order: {pictures}.)",
        "mc_template": "{question}\n\n{choices}\n\nAnswer with one letter. The last line of your response must be of "
                       "the form 'ANSWER: $LETTER' (without quotes) where LETTER is one of {letters}.",
    },
    "de": {
        "match_text": "Wähle das Bild, das zum Text passt: „{phrase}“.",
        "answer_with": "Antworte mit {letters}.",
        "answer_cue": "Antwort:",
        "two_letters": "{first} oder {last}",
        "many_letters": "{rest} oder {last}",
        "option_entry": "{letter}: {option}",
        "option_separator": "; ",
        "slider_question": "{image} Dieser Zahlenstrahl geht von {low} links bis {high} rechts. "
                           "Wo liegt die Zahl {target}?",
        "slider_clause": "Antworte mit einer einzigen Zahl zwischen 0 und 1: 0 bedeutet das linke Ende und 1 das "
                         "rechte Ende.",
        "yes": "Ja",
        "no": "Nein",
        "yes_no_picture": "Vorschlag: {picture}\nIst dieses Bild die Antwort? Antworte mit {yes} oder {no}.",
        "yes_no_text": "Vorschlag: {option}\nIst das die Antwort? Antworte mit {yes} oder {no}.",
        "pictures_attached": "(Angehängte Bilder in dieser Reihenfolge: {pictures}.)",
        "mc_template": "{question}\n\n{choices}\n\nAntworte mit einem Buchstaben. Die letzte Zeile deiner Antwort muss "
                       "die Form 'ANSWER: $LETTER' haben (ohne Anführungszeichen), wobei LETTER einer der "
                       "Buchstaben {letters} ist.",
    },
    "es-CO": {
        "match_text": "Elige la imagen que corresponde al texto: «{phrase}».",
        "answer_with": "Responde con {letters}.",
        "answer_cue": "Respuesta:",
        "two_letters": "{first} o {last}",
        "many_letters": "{rest} o {last}",
        "option_entry": "{letter}: {option}",
        "option_separator": "; ",
        "slider_question": "{image} Esta recta numérica va de {low} a la izquierda a {high} a la derecha. "
                           "¿Dónde va el número {target}?",
        "slider_clause": "Responde con un solo número entre 0 y 1: 0 significa el extremo izquierdo y 1 el extremo "
                         "derecho.",
        "yes": "Sí",
        "no": "No",
        "yes_no_picture": "Opción: {picture}\n¿Es esta imagen la respuesta? Responde {yes} o {no}.",
        "yes_no_text": "Opción: {option}\n¿Es esta la respuesta? Responde {yes} o {no}.",
        "pictures_attached": "(Imágenes adjuntas en este orden: {pictures}.)",
        "mc_template": "{question}\n\n{choices}\n\nResponde con una sola letra. La última línea de tu respuesta debe "
                       "tener la forma 'ANSWER: $LETTER' (sin comillas), donde LETTER es una de {letters}.",
    },
    "fr-CA": {
        "match_text": "Choisis l’image qui correspond au texte : « {phrase} ».",
        "answer_with": "Réponds par {letters}.",
        "answer_cue": "Réponse :",
        "two_letters": "{first} ou {last}",
        "many_letters": "{rest} ou {last}",
        "option_entry": "{letter} : {option}",
        "option_separator": "; ",
        "slider_question": "{image} Cette droite numérique va de {low} à gauche à {high} à droite. "
                           "Où se place le nombre {target}?",
        "slider_clause": "Réponds par un seul nombre entre 0 et 1 : 0 désigne l’extrémité gauche et 1, l’extrémité "
                         "droite.",
        "yes": "Oui",
        "no": "Non",
        "yes_no_picture": "Proposition : {picture}\nCette image est-elle la réponse? Réponds par {yes} ou {no}.",
        "yes_no_text": "Proposition : {option}\nEst-ce la réponse? Réponds par {yes} ou {no}.",
        "pictures_attached": "(Images jointes dans cet ordre : {pictures}.)",
        "mc_template": "{question}\n\n{choices}\n\nRéponds par une seule lettre. La dernière ligne de ta réponse doit "
                       "avoir la forme 'ANSWER: $LETTER' (sans guillemets), où LETTER est l’une des lettres "
                       "{letters}.",
    },
    "nl": {
        "match_text": "Kies de afbeelding die bij de tekst past: ‘{phrase}’.",
        "answer_with": "Antwoord met {letters}.",
        "answer_cue": "Antwoord:",
        "two_letters": "{first} of {last}",
        "many_letters": "{rest} of {last}",
        "option_entry": "{letter}: {option}",
        "option_separator": "; ",
        "slider_question": "{image} Deze getallenlijn loopt van {low} links tot {high} rechts. "
                           "Waar hoort het getal {target}?",
        "slider_clause": "Antwoord met één getal tussen 0 en 1: 0 betekent het linkeruiteinde en 1 het "
                         "rechteruiteinde.",
        "yes": "Ja",
        "no": "Nee",
        "yes_no_picture": "Kandidaat: {picture}\nIs deze afbeelding het antwoord? Antwoord {yes} of {no}.",
        "yes_no_text": "Kandidaat: {option}\nIs dit het antwoord? Antwoord {yes} of {no}.",
        "pictures_attached": "(Bijgevoegde afbeeldingen in deze volgorde: {pictures}.)",
        "mc_template": "{question}\n\n{choices}\n\nAntwoord met één letter. De laatste regel van je antwoord moet de "
                       "vorm 'ANSWER: $LETTER' hebben (zonder aanhalingstekens), waarbij LETTER een van {letters} "
                       "is.",
    },
}
# Swiss standard German: Germany's words (none has an ß to write as ss), with guillemets around the phrase
TEXTS["de-CH"] = {**TEXTS["de"], "match_text": "Wähle das Bild, das zum Text passt: «{phrase}»."}


def text(locale: Locale, key: str, **fields: str) -> str:
    """The locale's template `key` with its `{placeholders}` filled (KeyError names a missing locale or key)."""
    return TEXTS[locale.code][key].format(**fields)


def item_locale(item: Mapping[str, Any]) -> Locale:
    """The locale of a prepared item or doc: its `locale` code (a translated item's), English when it has none."""
    return locale(item.get("locale"))
