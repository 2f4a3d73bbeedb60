"""Compare a whole lmms-eval tree with the pinned upstream file hashes (of the commit, else of the PyPI wheel).

Files our series patched count as such (not as differences); for a commit pin, files the PyPI wheel never ships
are reported as expected-missing, since the 0.7.2 wheel lacks the commit's extensionless templates, most READMEs
and UI assets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from levante_tasks.lmms.patcher.engine import RECORD_NAME
from levante_tasks.lmms.patcher.patchset import PatchSet, sha256_bytes
from levante_tasks.lmms.patcher.target import Target

IGNORED_PARTS = ("__pycache__",)


@dataclass
class AuditReport:
    """Pinned files sorted by outcome, plus files in the tree that the commit does not have."""

    identical: list[str] = field(default_factory=list)
    patched: list[str] = field(default_factory=list)
    differ: list[str] = field(default_factory=list)
    missing_expected: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing differs and nothing is missing beyond what the wheel is known to omit."""
        return not self.differ and not self.missing


def audit_tree(target: Target, patch_set: PatchSet) -> AuditReport:
    """Hash every pinned file of `target` and classify it; list unpinned files under lmms_eval/ as extra."""
    report = AuditReport()
    pins = patch_set.tree_pins
    omitted = patch_set.wheel_omits if target.kind == "installed" else frozenset()
    for path, digest in sorted(pins.items()):
        file = target.root / path
        if not file.is_file():
            (report.missing_expected if path in omitted else report.missing).append(path)
            continue
        actual = sha256_bytes(file.read_bytes())
        if actual == digest:
            report.identical.append(path)
        elif actual in patch_set.chains.get(path, [])[1:]:  # fully or partly patched by our series
            report.patched.append(path)
        else:
            report.differ.append(path)
    for file in sorted(target.package_dir.rglob("*")):
        rel = file.relative_to(target.root).as_posix()
        if file.is_file() and rel not in pins and file.name != RECORD_NAME and not _ignored(file.parts):
            report.extra.append(rel)
    return report


def _ignored(parts: tuple[str, ...]) -> bool:
    """Byte-code caches are not part of the source tree."""
    return any(part in IGNORED_PARTS for part in parts)
