"""How `prepare` treats egma-math's manifest rows: Counting items are excluded (their options are Correct/Incorrect),
non-symbolic cards are pictures, number-line sliders are answered with a number. LEVANTE's translation table labels
its rows `math`."""

from levante_tasks.data.manifest import ManifestRow
from levante_tasks.data.rules import ItemRules


def _math_exclusion(row: ManifestRow) -> str | None:
    return "counting_options_are_correct_incorrect" if row.get("trial_type") == "Counting" else None


def _non_symbolic(row: ManifestRow) -> bool:
    return row.get("trial_type").startswith("Non-symbolic")


def _slider(row: ManifestRow) -> bool:
    return row.get("trial_type") == "Number Line Slider"


RULES = ItemRules(_math_exclusion, "Counting items (options Correct/Incorrect) are excluded; number-line pictures are "
                                   "drawn by prepare; slider items are generate_until only.",
                  picture_row=_non_symbolic, slider=_slider, table_labels=("math",))
