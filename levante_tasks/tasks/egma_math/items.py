"""How `prepare` treats egma-math's manifest rows: Counting items are excluded (their options are Correct/Incorrect)."""

from levante_tasks.data.manifest import ManifestRow
from levante_tasks.data.rules import ItemRules


def _math_exclusion(row: ManifestRow) -> str | None:
    return "counting_options_are_correct_incorrect" if row.get("trial_type") == "Counting" else None


RULES = ItemRules(_math_exclusion, "Counting items (options Correct/Incorrect) are excluded; number-line pictures are "
                                   "drawn by prepare; slider items are generate_until only.")
