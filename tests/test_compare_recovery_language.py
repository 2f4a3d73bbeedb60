"""Recovery by language on the synthetic release's three sites (compare.recovery_language): each language's model
theta and age equivalent recover their truth with about 95% coverage, under vocab's by-language records and trog's
multigroup-by-dataset record; scoring a language with another's record biases theta, comparing it with another's
children biases the age. Fixed seeds; the bands are wide enough for any platform's rounding, narrow enough to fail."""

from __future__ import annotations

import pandas as pd
import pytest

from levante_tasks.compare.recovery_language import LanguageDesign, figures, run
from levante_tasks.synth.populations import POPULATIONS

SMALL = {"n_children": 1547, "n_models": 25, "n_boot": 200, "seed": 1}  # each language's runs: 510 / 170 / 94
SWAP = ("es-CO", "de-DE")
LANGUAGES = [p.language for p in POPULATIONS]


@pytest.fixture(scope="module")
def vocab() -> pd.DataFrame:
    """Two replicates on vocab's by_language records: 50 models per language."""
    return run(LanguageDesign(task="vocab", replicates=2, **SMALL))


@pytest.fixture(scope="module")
def trog() -> pd.DataFrame:
    """Two replicates on trog's multigroup record: 50 models per language."""
    return run(LanguageDesign(task="trog", replicates=2, **SMALL))


def assert_recovered(found: dict[str, dict[str, float]]) -> None:
    assert list(found) == LANGUAGES
    for language, values in found.items():
        assert values["n_models"] == 50, language
        assert abs(values["theta_bias"]) < 0.2 and 0.88 <= values["theta_coverage"] <= 1.0, (language, values)
        assert abs(values["age_bias"]) < 0.8 and 0.88 <= values["age_coverage"] <= 1.0, (language, values)


def test_each_language_recovers_theta_and_age_on_its_by_language_record(vocab: pd.DataFrame) -> None:
    assert_recovered(figures(vocab))
    truth = vocab.drop_duplicates(["replicate", "language", "model"])
    per_model = truth.pivot_table(index=["replicate", "model"], columns="language", values="true_theta")
    assert (per_model.nunique(axis=1) == 3).all()  # one model, a different true theta in each language


def test_each_language_recovers_theta_and_age_on_the_multigroup_record(trog: pd.DataFrame) -> None:
    assert_recovered(figures(trog))


def test_swapping_two_languages_records_breaks_theta(vocab: pd.DataFrame) -> None:
    """Colombia scored with Germany's vocab record and Germany with Colombia's: the difficulties differ per language
    (configural) and so does each record's scale, so theta is off by about half a logit in opposite directions
    (these seeds: -0.51 / +0.38; unswapped -0.07 / +0.09); the age equivalent moves with its children, who are
    rescored with the same record, so only theta shows it."""
    swapped = figures(run(LanguageDesign(task="vocab", replicates=2, swap_records=SWAP, **SMALL)))
    es, de, en = (swapped[language] for language in LANGUAGES)
    assert es["theta_bias"] < -0.3 and de["theta_bias"] > 0.2
    assert abs(en["theta_bias"]) < 0.2  # the language left alone is as before
    assert figures(vocab)["en-US"] == en


def test_swapping_two_languages_children_breaks_the_age(trog: pd.DataFrame) -> None:
    """Colombia's models compared with Germany's children and the other way round: theta is untouched (the record is
    shared) but each age equivalent is read off the other language's curve, a year or more off in opposite
    directions (these seeds: -1.00 / +0.86 years; unswapped +0.01 / +0.13)."""
    swapped = figures(run(LanguageDesign(task="trog", replicates=1, swap_children=SWAP, **SMALL)))
    es, de = swapped["es-CO"], swapped["de-DE"]
    assert es["age_bias"] < -0.6 and de["age_bias"] > 0.5
    assert abs(es["theta_bias"]) < 0.25 and abs(de["theta_bias"]) < 0.25
