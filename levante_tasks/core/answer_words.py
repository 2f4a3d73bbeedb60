"""The words of each translated locale's answer forms: what `core.parsing` reads besides the English forms.

Each entry is a set of regex fragments (matched case-insensitively) in the grammar's forms (docs/tasks.md, "Answer
parsing"): `{letter}` marks the answer's letter (the grammar's letter token: a standalone capital), `{start}` the
English `option_is` openers (a sentence start, or a bracket before the letter), `{opens}` a sentence start and
`{end}` a letter closing its sentence or line (the sentence "Opción B."). Every form keeps the English strictness:
the one letter rule, hedges, the article rule and the negations (the English ones and the locale's `negations`)
apply to the locale's forms as to English ones. `version` is the locale's part of its records' `parser_version`
(`4+de.2`): bump it with any change of what the locale's forms read. de-CH writes German as Germany does (its
quotes, «», are listed with de's).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AnswerWords:
    """One locale's answer forms and the words around a letter that the strictness rules read."""

    version: str  # the locale's grammar version, recorded after the core one: "4+de.2"
    answer_is: tuple[str, ...]  # "Die Antwort ist B", "Antwort: B"
    option_is: tuple[str, ...]  # "Option B ist richtig", "B ist die richtige Antwort"
    i_choose: tuple[str, ...]  # "Ich wähle B", "Ich würde B wählen"
    answer_line: str  # the keyword of a line `Antwort: b` (as English `ANSWER: b`)
    hedges: str  # words between two letters that offer both: "B oder C" (as English "or", "and")
    continuations: str  # words after a bare "A" that make it the letter, not a word: "A ist richtig", "A oder B"
    quotes: str  # the locale's quotation marks, read around a letter as " and ' are
    option_text_prefix: str  # what may precede an option's text: "Die Antwort ist Hund"
    negations: str  # words that take back a form after them in its clause or a letter right after them, as English
    # "incorrect", "least", "not", "except": "Die falsche Antwort ist C", "nicht C"
    taken_back: str = ""  # after a form, in its sentence or the next, what refers back to it and rules it out:
    # "Die Antwort ist B, aber das ist falsch" (as English "..., but it's wrong")
    negations_after: str = ""  # a negating word right after a letter that rules it out: "Ich wähle B nicht"
    elision: bool = False  # a capital before an apostrophe and a letter is an elided word (French "C'est", "D'après")


_GERMAN = dict(
    answer_is=(r"\b(?:antwort|option|auswahl|wahl|lösung|loesung)\s*(?:ist|lautet|wäre|waere|:)\s*:?\s*{letter}",),
    option_is=(r"(?:\b(?:option|antwort|auswahl|bild)\s+|{start}){letter}\s+(?:ist|scheint|wirkt)\s+"
               r"(?:(?:die|das|der|am)\s+)?(?:richtig|korrekt|best|passend|zutreffend)(?:e|en|er|es)?\b",
               r"{opens}(?:antwort|auswahl)\s+{letter}{end}"),
    i_choose=(r"\bich\s+(?:wähle|waehle|nehme|entscheide\s+mich\s+f(?:ü|ue)r|tippe\s+auf)\s+(?:(?:die|das)\s+)?"
              r"(?:(?:option|antwort|bild)\s+)?{letter}",
              r"\bich\s+würde\s+(?:(?:die|das)\s+)?(?:(?:option|antwort|bild)\s+)?{letter}\s+(?:wählen|nehmen)\b"),
    answer_line="antwort",
    hedges=r"oder|und|bzw\.?|beziehungsweise",
    continuations=r"ist|scheint|wirkt|oder|und|bzw|beziehungsweise|sein|wäre|wählen|nehmen",
    quotes="„“‚‘«»",
    option_text_prefix=r"(?:die\s+)?antwort\s+(?:ist|lautet)\s*:?\s*",
    negations=r"nicht|kein\w*|nie|falsch\w*|unrichtig\w*|inkorrekt\w*|unwahrscheinlich\w*|wenigsten|"
              r"ausgeschlossen\w*|ausschlie(?:ß|ss)\w*|außer|ausser|ohne",
    taken_back=r"\b(?:das|dies|die|sie|er|es)\s+(?:ist|wäre|waere|scheint)\s+(?:aber\s+|jedoch\s+|eindeutig\s+)?"
               r"(?:falsch|inkorrekt|unrichtig|nicht\s+(?:richtig|korrekt|die\s+(?:richtige\s+)?antwort))\b",
    negations_after=r"nicht",
)

# locale code -> its words (every translated locale of schema.locales)
WORDS: dict[str, AnswerWords] = {
    "de": AnswerWords(version="2", **_GERMAN),
    "de-CH": AnswerWords(version="2", **_GERMAN),
    "es-CO": AnswerWords(
        version="2",
        answer_is=(r"\b(?:respuesta|opción|opcion|elección|eleccion)(?:\s+correcta)?\s*"
                   r"(?:es|:|sería|seria|debe\s+ser)\s*:?\s*(?:la\s+)?{letter}",),
        option_is=(r"(?:\b(?:opción|opcion|respuesta|imagen|la)\s+|{start}){letter}\s+(?:es|parece)\s+(?:ser\s+)?"
                   r"(?:(?:la|el)\s+)?(?:(?:respuesta|opción|opcion|imagen)\s+)?"
                   r"(?:correct[ao]|adecuad[ao]|acertad[ao]|mejor)\b",
                   r"{opens}(?:opción|opcion|respuesta)\s+{letter}{end}"),
        i_choose=(r"\b(?:yo\s+)?(?:elijo|escojo|selecciono|elegiría|elegiria|escogería|escogeria|me\s+quedo\s+con)"
                  r"\s+(?:la\s+)?(?:(?:opción|opcion|respuesta|imagen)\s+)?{letter}",),
        answer_line="respuesta",
        hedges=r"o|ó|u|y",
        continuations=r"es|parece|o|ó|u|y|sería|seria",
        quotes="«»“”‘’",
        option_text_prefix=r"(?:la\s+)?respuesta\s+es\s*:?\s*",
        negations=r"no|nunca|incorrect[ao]s?|err[oó]ne[ao]s?|equivocad[ao]s?|fals[ao]s?|menos|descart\w*|"
                  r"excepto|salvo|elimin\w*",
        taken_back=r"(?:\b(?:eso|esa|esta|ella|la\s+cual|lo\s+cual|que)\s+|(?<=[,;]\s)(?:pero\s+|aunque\s+)?|"
                   r"\bpero\s+)(?:es|ser[ií]a|est[aá])\s+(?:incorrect[ao]|err[oó]ne[ao]|equivocad[ao]|fals[ao]|"
                   r"mal)\b|(?:\bpero\s+|(?<=[,;]\s))no\s+es\s+(?:la\s+)?correct[ao]\b",
    ),
    "fr-CA": AnswerWords(
        version="2",
        answer_is=(r"\b(?:réponse|reponse|option|choix)(?:\s+(?:correcte|exacte))?\s*"
                   r"(?:est|:|serait|doit\s+(?:ê|e)tre)\s*:?\s*(?:la\s+)?{letter}",),
        option_is=(r"(?:\b(?:option|réponse|reponse|image|choix|la)\s+|{start}){letter}\s+(?:est|semble)\s+"
                   r"(?:(?:ê|e)tre\s+)?(?:(?:la|le)\s+)?(?:bonne|bon|correcte?|juste|exacte?|meilleure?)\b",
                   r"{opens}(?:choix|réponse|reponse)\s+{letter}{end}"),
        i_choose=(r"\bje\s+(?:choisis|choisirais|prends|prendrais|sélectionne|selectionne|sélectionnerais|retiens)\s+"
                  r"(?:l['’](?:option|image)\s+|la\s+(?:(?:réponse|reponse)\s+)?)?{letter}",
                  r"\bj['’](?:opte|opterais)\s+pour\s+(?:l['’](?:option|image)\s+|la\s+(?:(?:réponse|reponse)\s+)?)?"
                  r"{letter}"),
        answer_line="réponse|reponse",
        hedges=r"ou|et",
        continuations=r"est|semble|ou|et|serait",
        quotes="«»“”‘’",
        option_text_prefix=r"(?:la\s+)?(?:réponse|reponse)\s+est\s*:?\s*",
        negations=r"pas|ne|n['’]\w+|jamais|incorrect\w*|mauvais\w*|faux|fausse\w*|erron\w*|moins|élimin\w*|"
                  r"elimin\w*|exclu\w*|sauf|excepté|hormis",
        taken_back=r"(?:\bc['’]est|\b(?:elle|il|ce|cela|ceci|ça|qui)\s+(?:est|serait))\s+(?:pourtant\s+|clairement\s+)?"
                   r"(?:faux|fausse|incorrecte?|erron[ée]e?|mauvaise?)\b"
                   r"|\b(?:ce|elle|il|cela|ça)\s+n['’](?:est|serait)\s+pas\s+(?:la\s+bonne|correcte?|juste|exacte?)\b",
        elision=True,
    ),
    "nl": AnswerWords(
        version="2",
        answer_is=(r"\b(?:antwoord|optie|keuze)\s*(?:is|:|luidt|wordt)\s*:?\s*{letter}",),
        option_is=(r"(?:\b(?:optie|antwoord|afbeelding|plaatje|keuze)\s+|{start}){letter}\s+(?:is|lijkt)\s+"
                   r"(?:(?:het|de)\s+)?(?:juist|correct|goed|best)e?\b",
                   r"{opens}(?:optie|keuze|antwoord)\s+{letter}{end}"),
        i_choose=(r"\bik\s+(?:(?:kies|neem|selecteer)(?:\s+voor)?|ga\s+voor)\s+(?:(?:optie|antwoord|afbeelding)\s+)?"
                  r"{letter}",
                  r"\bik\s+(?:zou|zal)\s+(?:voor\s+)?(?:(?:optie|antwoord|afbeelding)\s+)?{letter}\s+"
                  r"(?:kiezen|nemen|gaan)\b"),
        answer_line="antwoord",
        hedges=r"of|en",
        continuations=r"is|lijkt|of|en|kiezen|nemen|gaan",
        quotes="„”“‘’",
        option_text_prefix=r"(?:het\s+)?antwoord\s+is\s*:?\s*",
        negations=r"niet|geen|nooit|onjuist\w*|fout\w*|verkeerd\w*|incorrect\w*|minst\w*|onwaarschijnlijk\w*|"
                  r"uitgesloten|uitsluit\w*|behalve|zonder",
        taken_back=r"\b(?:dat|die|dit|het|deze)\s+(?:is|lijkt|zou\s+zijn)\s+(?:echter\s+|duidelijk\s+)?"
                   r"(?:fout|onjuist|verkeerd|incorrect|niet\s+(?:juist|correct|goed|het\s+(?:juiste\s+)?antwoord))\b",
        negations_after=r"niet",
    ),
}
