"""The names of our writers' hidden temp files and staging folders, and the target each one stands for.

`atomic` makes them: `.<name>.<pid>.<random>.part` (a file being written), `.<name>.staging-<pid>.<random>` (a
folder being built) and `.<name>.old-<pid>.<random>` (the tree a swap set aside). Messages name the target
(`<name>`) instead: the user never typed the hidden name.
"""

from __future__ import annotations

import re
from pathlib import PurePath

TEMP_NAME = re.compile(
    r"^\.(?P<name>.+)\.(?:(?P<pid>\d+)\.[^.]+\.part|(?P<kind>staging|old)-(?P<dpid>\d+)\.[^.]+)$")


def target_path(path: str) -> str:
    """`path` with every temp or staging component replaced by the target it stands for
    (`out/.summary.staging-12.ab3x/summary.md` -> `out/summary/summary.md`)."""
    pure = PurePath(path)
    parts = [(m.group("name") if (m := TEMP_NAME.match(part)) else part) for part in pure.parts]
    return str(PurePath(*parts)) if parts else path
