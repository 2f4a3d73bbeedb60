"""The cross-language item table (`cross_language_items.csv`): per item and translated locale, the models' accuracy
in English and in the locale next to the children's proportion correct in English and in that language, with the
items whose drops disagree flagged (LEVANTE's QA reads such items for a mistranslation).

drop = accuracy in English - accuracy in the locale (positive: harder in the locale). Models: the runs of the locale
paired with the same run in English (same `english_unit`: model, variant, output type, option-order seed; original
images only), pooled over the pairs. Children: every trial with a `correct` of the children whose language is
English, or the locale; a children's drop needs `min_n` trials of the item on each side. Each drop is centred on
its mean over the (task, locale)'s items that have both drops, so a gap between whole populations (the sites'
children differ in age and ability; a model may be weaker in a language overall) moves no item: what is left is the
item's own drop, as in a differential item functioning screen. disagreement = |centred model drop - centred
children drop|, ranked within (task, locale), largest first; flagged at `conventions.FLAG_DROP` or more.
Children pooled because no language was recorded give no children's columns, so nothing is flagged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from levante_tasks.compare.conventions import FLAG_DROP
from levante_tasks.compare.languages import locale_rank
from levante_tasks.schema.locales import ENGLISH
from levante_tasks.schema.variant import Control

COLUMNS = ["task", "item_uid", "locale", "n_model_runs", "model_accuracy_en", "model_accuracy", "model_drop",
           "n_children_trials_en", "children_p_correct_en", "n_children_trials", "children_p_correct",
           "children_drop", "model_drop_centred", "children_drop_centred", "drop_difference", "abs_drop_difference",
           "rank", "flagged"]
KEY = ["task", "item_uid", "locale"]


def model_accuracy(records: pd.DataFrame) -> pd.DataFrame:
    """Per (task, item, translated locale): paired runs, their accuracy in English and in the locale."""
    original = records[records["control"] == Control.ORIGINAL.value]
    english = original[original["locale"] == ENGLISH.code]
    translated = original[original["locale"] != ENGLISH.code]
    paired = translated.merge(english[["english_unit", "task", "item_uid", "correct"]],
                              on=["english_unit", "task", "item_uid"], suffixes=("", "_en"))
    return paired.groupby(KEY, as_index=False).agg(n_model_runs=("correct", "size"),
                                                   model_accuracy_en=("correct_en", "mean"),
                                                   model_accuracy=("correct", "mean"))


def children_correct(trials: pd.DataFrame, languages: np.ndarray) -> pd.DataFrame:
    """Per (item, children's language): trials with a `correct` and their proportion correct (`languages`: each
    trial's language label, None for a child without one)."""
    frame = pd.DataFrame({"item_uid": trials["item_uid"].astype(object).to_numpy(), "language": languages,
                          "correct": trials["correct"].to_numpy(float)}).dropna()
    return frame.groupby(["item_uid", "language"], as_index=False).agg(n=("correct", "size"), p=("correct", "mean"))


def cross_language_items(records: pd.DataFrame, trials: pd.DataFrame, languages: np.ndarray,
                         min_n: int) -> pd.DataFrame:
    """The table of the module docstring, in task, locale (report order) and rank order."""
    models = model_accuracy(records)
    if models.empty:
        return pd.DataFrame(columns=COLUMNS)
    children = children_correct(trials, languages).set_index(["item_uid", "language"])
    english = children.reindex(pd.MultiIndex.from_arrays([models["item_uid"], [ENGLISH.code] * len(models)]))
    local = children.reindex(pd.MultiIndex.from_arrays([models["item_uid"], models["locale"]]))
    # positions, not labels: the two reindexed tables name their second level differently and repeat item_uids
    enough = (english["n"].to_numpy() >= min_n) & (local["n"].to_numpy() >= min_n)
    table = models.assign(
        model_drop=models["model_accuracy_en"] - models["model_accuracy"],
        n_children_trials_en=english["n"].fillna(0).to_numpy(int),
        children_p_correct_en=english["p"].where(english["n"] >= min_n).to_numpy(float),
        n_children_trials=local["n"].fillna(0).to_numpy(int),
        children_p_correct=local["p"].where(local["n"] >= min_n).to_numpy(float),
    )
    table["children_drop"] = np.where(enough, table["children_p_correct_en"] - table["children_p_correct"], np.nan)
    both = table["children_drop"].notna()
    for column in ("model_drop", "children_drop"):  # centred within (task, locale) over the items with both drops
        mean = table[column].where(both).groupby([table["task"], table["locale"]]).transform("mean")
        table[f"{column}_centred"] = (table[column] - mean).where(both)
    table["drop_difference"] = table["model_drop_centred"] - table["children_drop_centred"]
    table["abs_drop_difference"] = table["drop_difference"].abs()
    table["_order"] = table["locale"].map(locale_rank)
    table = table.sort_values(["task", "_order", "abs_drop_difference", "item_uid"],
                              ascending=[True, True, False, True], na_position="last", kind="stable")
    ranked = table["abs_drop_difference"].notna()
    table["rank"] = (table.groupby(["task", "locale"]).cumcount() + 1).astype("Int64").where(ranked)
    table["flagged"] = (table["abs_drop_difference"] >= FLAG_DROP).to_numpy()
    return table[COLUMNS].reset_index(drop=True)


def cross_language_counts(table: pd.DataFrame) -> list[dict[str, object]]:
    """Per (task, locale) of the table: its items, those with children of both languages, those flagged (for
    comparison.json and the command's last lines)."""
    return [{"task": task, "locale": code, "items": int(len(part)),
             "with_children": int(part["abs_drop_difference"].notna().sum()),
             "flagged": int(part["flagged"].astype(bool).sum())}
            for (task, code), part in table.groupby(["task", "locale"], sort=False)]
