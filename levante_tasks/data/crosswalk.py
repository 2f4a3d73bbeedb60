"""The one place that maps item uids between the manifest, Redivis trials and IRT model records.

Spellings differ (docs/levante.md §11.5): the manifest writes `vocab__acorn`, Redivis/IRT `vocab_word_acorn`;
IRT item columns carry an instance suffix `-1` (`-2` = seen twice); mental-rotation angles above 180 are stored
as their mirror (`200` -> `160`, `240` -> `120`, `280` -> `080`, `320` -> `040`) and 3-D shapes as
`mrot_3d_shape_`; hostile-attribution items drop the `tom_` prefix. `canonical_uid` maps any spelling to the
manifest's; `irt_item_name` gives the IRT column name for a model answering an item once.
"""

from __future__ import annotations

import re

_INSTANCE_SUFFIX = re.compile(r"-(\d+)$")
_MROT_MIRROR = {"200": "160", "240": "120", "280": "080", "320": "040"}
_MROT_2D = re.compile(r"^mrot_2d_(?P<animal>[a-z]+)_(?P<angle>\d{3})_(?P<stim>[A-Za-z]+-\d{3})$")


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
    if uid.startswith("mrot_3d_shape_"):
        return uid
    if uid.startswith("tom_ha_"):
        return uid[len("tom_") :]
    return uid


def redivis_uid(manifest_uid: str) -> str:
    """The Redivis/IRT spelling of a manifest uid (inverse of `canonical_uid` for vocab)."""
    if manifest_uid.startswith("vocab__"):
        return "vocab_word_" + manifest_uid[len("vocab__") :]
    return manifest_uid


def mrot_folded_angle_uid(manifest_uid: str) -> str:
    """Mental-rotation uid with angles > 180 folded to 360 - angle, as some registries store them."""
    match = _MROT_2D.match(manifest_uid)
    if not match or match.group("angle") not in _MROT_MIRROR:
        return manifest_uid
    folded = _MROT_MIRROR[match.group("angle")]
    stim = match.group("stim")
    return f"mrot_2d_{match.group('animal')}_{folded}_{stim[:3]}{folded}"


def irt_item_name(manifest_uid: str, instance: int = 1) -> str:
    """IRT column name for an item answered `instance` times (a model answers once: `-1`)."""
    return f"{manifest_uid}-{instance}"


def spellings(uid: str) -> list[str]:
    """Every known spelling of one item uid, manifest spelling first (no duplicates)."""
    canonical = canonical_uid(uid)
    candidates = [canonical, uid, redivis_uid(canonical), mrot_folded_angle_uid(canonical)]
    if canonical.startswith("ha_"):
        candidates.append("tom_" + canonical)
    return list(dict.fromkeys(candidates))


def match_uids(wanted: list[str], available: list[str]) -> tuple[dict[str, str], list[str]]:
    """Map each wanted uid to an available one through `spellings`; also return the unmatched, in order."""
    available_set = set(available)
    mapping: dict[str, str] = {}
    unmatched: list[str] = []
    for uid in wanted:
        hit = next((s for s in spellings(uid) if s in available_set), None)
        if hit is None:
            unmatched.append(uid)
        else:
            mapping[uid] = hit
    return mapping, unmatched
