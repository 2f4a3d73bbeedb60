"""The one place that maps item uids between the manifest, Redivis trials and IRT model records.

Spellings differ between the release manifest and the Redivis trials / IRT registry (rlevante): vocab items are
`vocab__acorn` in the manifest and `vocab_word_acorn` in Redivis; hostile-attribution items are `tom_ha_*` there
and `ha_*` in the manifest; IRT item columns carry an instance suffix `-1` (`-2` = seen twice). `canonical_uid`
maps a Redivis/IRT spelling to the manifest's, `redivis_uid` the other way, `strip_instance` splits the suffix.
"""

from __future__ import annotations

import re

_INSTANCE_SUFFIX = re.compile(r"-(\d+)$")


def strip_instance(irt_item: str) -> tuple[str, int]:
    """Split an IRT item column `<item_uid>-<instance>` into (item_uid, instance).

    Registry names always carry the suffix (rlevante `add_item_ids`), and uids may themselves end in
    `-<digits>` (`counting-afc-2`), so exactly one trailing `-<digits>` is removed.
    """
    match = _INSTANCE_SUFFIX.search(irt_item)
    if not match:
        raise ValueError(f"IRT item name {irt_item!r} has no '-<instance>' suffix")
    return irt_item[: match.start()], int(match.group(1))


def canonical_uid(uid: str) -> str:
    """Map a Redivis/IRT spelling of an item uid to the manifest's spelling (identity when already canonical)."""
    uid = uid.strip()
    if uid.startswith("vocab_word_"):
        return "vocab__" + uid[len("vocab_word_") :]
    if uid.startswith("tom_ha_"):
        return uid[len("tom_") :]
    return uid


def redivis_uid(manifest_uid: str) -> str:
    """The Redivis/IRT spelling of a manifest uid (inverse of `canonical_uid` for vocab)."""
    if manifest_uid.startswith("vocab__"):
        return "vocab_word_" + manifest_uid[len("vocab__") :]
    return manifest_uid
