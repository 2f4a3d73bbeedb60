"""How `prepare` treats theory-of-mind's manifest rows: stories from its corpus; hostile-attribution items excluded.
LEVANTE's translation table labels its rows `theory-of-mind` (hostile-attribution ones in some versions)."""

from levante_tasks.data.manifest import ManifestRow
from levante_tasks.data.rules import ItemRules


def _tom_exclusion(row: ManifestRow) -> str | None:
    return "hostile_attribution_no_normative_answer" if row.item_uid.startswith("ha_") else None


RULES = ItemRules(_tom_exclusion, "Stories come from the theory-of-mind corpus; hostile-attribution items are "
                                  "excluded (no normative answer).", stories=True,
                  table_labels=("theory-of-mind", "hostile-attribution"))
