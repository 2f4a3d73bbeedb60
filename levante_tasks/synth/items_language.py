"""Colour and shape words of the synthetic picture-word tasks (vocab, trog, the generic picture choice), `pick`,
and the same words in German and Spanish (Colombia) with the little grammar their translations need."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

COMMON_COLOURS = ("red", "blue", "green", "yellow")
RARE_COLOURS = ("purple", "orange", "pink", "brown", "teal", "maroon")
COMMON_SHAPES = ("circle", "square", "triangle", "star")
RARE_SHAPES = ("diamond", "pentagon", "hexagon", "cross", "trapezoid", "oval", "crescent", "arrow")


def pick(rng: np.random.Generator, pool: Sequence[str], k: int, exclude: Sequence[str] = ()) -> list[str]:
    """k distinct members of `pool` (minus `exclude`), in random order."""
    candidates = [x for x in pool if x not in exclude]
    return [candidates[i] for i in rng.choice(len(candidates), size=k, replace=False)]


# --- the same words in the translated locales (LEVANTE's codes: the translation table's columns) -----------------

@dataclass(frozen=True)
class Noun:
    """A shape noun in one language: singular, plural and grammatical gender (`m`, `f`, `n`)."""

    singular: str
    plural: str
    gender: str


@dataclass(frozen=True)
class Adjective:
    """A colour or size word: German as (predicative, attributive stem); Spanish as (masculine, feminine)."""

    first: str
    second: str


GERMAN = "de"
SPANISH = "es-CO"
TRANSLATED_LOCALES = (SPANISH, GERMAN)  # the columns the synthetic table fills, in the real table's column order
NOUNS: dict[str, dict[str, Noun]] = {
    GERMAN: {
        "circle": Noun("Kreis", "Kreise", "m"), "square": Noun("Quadrat", "Quadrate", "n"),
        "triangle": Noun("Dreieck", "Dreiecke", "n"), "star": Noun("Stern", "Sterne", "m"),
        "diamond": Noun("Raute", "Rauten", "f"), "pentagon": Noun("Fünfeck", "Fünfecke", "n"),
        "hexagon": Noun("Sechseck", "Sechsecke", "n"), "cross": Noun("Kreuz", "Kreuze", "n"),
        "trapezoid": Noun("Trapez", "Trapeze", "n"), "oval": Noun("Oval", "Ovale", "n"),
        "crescent": Noun("Halbmond", "Halbmonde", "m"), "arrow": Noun("Pfeil", "Pfeile", "m"),
        "box": Noun("Kiste", "Kisten", "f"),
    },
    SPANISH: {
        "circle": Noun("círculo", "círculos", "m"), "square": Noun("cuadrado", "cuadrados", "m"),
        "triangle": Noun("triángulo", "triángulos", "m"), "star": Noun("estrella", "estrellas", "f"),
        "diamond": Noun("rombo", "rombos", "m"), "pentagon": Noun("pentágono", "pentágonos", "m"),
        "hexagon": Noun("hexágono", "hexágonos", "m"), "cross": Noun("cruz", "cruces", "f"),
        "trapezoid": Noun("trapecio", "trapecios", "m"), "oval": Noun("óvalo", "óvalos", "m"),
        "crescent": Noun("media luna", "medias lunas", "f"), "arrow": Noun("flecha", "flechas", "f"),
        "box": Noun("caja", "cajas", "f"),
    },
}
ADJECTIVES: dict[str, dict[str, Adjective]] = {
    GERMAN: {
        "red": Adjective("rot", "rot"), "blue": Adjective("blau", "blau"), "green": Adjective("grün", "grün"),
        "yellow": Adjective("gelb", "gelb"), "purple": Adjective("violett", "violett"),
        "orange": Adjective("orange", "orangefarben"), "pink": Adjective("rosa", "rosafarben"),
        "brown": Adjective("braun", "braun"), "teal": Adjective("türkis", "türkisfarben"),
        "maroon": Adjective("weinrot", "weinrot"), "big": Adjective("groß", "groß"),
        "small": Adjective("klein", "klein"),
    },
    SPANISH: {
        "red": Adjective("rojo", "roja"), "blue": Adjective("azul", "azul"), "green": Adjective("verde", "verde"),
        "yellow": Adjective("amarillo", "amarilla"), "purple": Adjective("morado", "morada"),
        "orange": Adjective("naranja", "naranja"), "pink": Adjective("rosado", "rosada"),
        "brown": Adjective("café", "café"), "teal": Adjective("turquesa", "turquesa"),
        "maroon": Adjective("vinotinto", "vinotinto"), "big": Adjective("grande", "grande"),
        "small": Adjective("pequeño", "pequeña"),
    },
}
_GERMAN_ARTICLES = {"nominative": {"m": "der", "f": "die", "n": "das"}, "dative": {"m": "dem", "f": "der", "n": "dem"}}


def noun_phrase(locale: str, shape: str, *adjectives: str, case: str = "nominative", plural: bool = False) -> str:
    """`the [adjectives] <shape>` in a translated locale, inflected: German `der rote Kreis` / dative `dem roten
    Kreis` (weak endings after the definite article), Spanish `el círculo rojo` / `la estrella roja`; a plural
    (`die Kreuze`, `las cruces`) takes no adjective here."""
    if plural and adjectives:
        raise ValueError("a plural noun phrase takes no adjective here")
    noun = NOUNS[locale][shape]
    words = [ADJECTIVES[locale][a] for a in adjectives]
    if locale == GERMAN:
        ending = "en" if case == "dative" else "e"
        article = "die" if plural else _GERMAN_ARTICLES[case][noun.gender]
        return " ".join([article, *(w.second + ending for w in words), noun.plural if plural else noun.singular])
    article = {("m", False): "el", ("f", False): "la", ("m", True): "los", ("f", True): "las"}[noun.gender, plural]
    forms = [w.first if noun.gender == "m" else w.second for w in words]
    return " ".join([article, noun.plural if plural else noun.singular, *forms])


def predicate(locale: str, shape: str, adjective: str) -> str:
    """An adjective said of a shape (`... ist rot`, `... es roja`): German uninflected, Spanish agreeing."""
    word = ADJECTIVES[locale][adjective]
    return word.first if locale == GERMAN or NOUNS[locale][shape].gender == "m" else word.second
