"""A generated L0 dataset on disk: `manifest.json`, `programs.jsonl` (generate) and `fewshots.jsonl` (augment).

Both steps build the folder in a staging sibling and swap it in whole, so a failed or killed run leaves the old
folder as it was. The manifest records the config, its sha256, the grammar text, the Python version and the
sha256 of each data file; reading checks those hashes, so an edited or truncated file is refused.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from levante_tasks.atomic import clean_stale, replaceable_dir, staged_dir
from levante_tasks.errors import LevanteError, display_path, problem_text
from levante_tasks.filehash import sha256_file
from levante_tasks.l0.config import ConfigError, GenConfig, from_mapping
from levante_tasks.l0.dataset import Generated
from levante_tasks.l0.grammar import GRAMMAR
from levante_tasks.textfile import read_optional_text

SCHEMA = 1
MANIFEST = "manifest.json"
PROGRAMS = "programs.jsonl"
FEWSHOTS = "fewshots.jsonl"
SCRATCH = ".scratch"  # generate's spool inside the staging folder, deleted before the swap


def jsonl_text(rows: list[dict[str, Any]]) -> str:
    """One compact JSON object per line (stable bytes: key order as built, ASCII escapes off)."""
    return "".join(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n" for row in rows)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(folder: Path, name: str, text: str) -> str:
    data = text.encode("utf-8")
    (folder / name).write_bytes(data)
    return _sha256(data)


def _manifest_text(manifest: dict[str, Any]) -> str:
    return json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _write_rows(folder: Path, name: str, rows: Iterable[dict[str, Any]]) -> tuple[str, int]:
    """Write `rows` one at a time (never all in memory); their sha256 and count."""
    digest, count = hashlib.sha256(), 0
    with (folder / name).open("wb") as handle:
        for row in rows:
            data = jsonl_text([row]).encode("utf-8")
            digest.update(data)
            handle.write(data)
            count += 1
    return digest.hexdigest(), count


def write_generated(out_dir: Path, config: GenConfig, produce: Callable[[Path], Generated]) -> Generated:
    """Replace `out_dir` by a folder holding the manifest and the test programs (no demonstrations yet).

    `produce(scratch)` generates them (it may spool in `scratch`, which is deleted after); an error it raises
    leaves `out_dir` as it was. Only an absent or empty folder, or an earlier L0 dataset (it holds the
    manifest), is replaced."""
    out_dir = replaceable_dir(out_dir, MANIFEST, "L0 dataset")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(out_dir.parent)
    with staged_dir(out_dir) as staging:
        scratch = staging / SCRATCH
        scratch.mkdir()
        generated = produce(scratch)
        digest, _ = _write_rows(staging, PROGRAMS, generated.items)
        shutil.rmtree(scratch)
        manifest = {
            "schema": SCHEMA,
            "generator": "levante-tasks l0 generate",
            "python": platform.python_version(),
            "config": config.to_dict(),
            "config_sha256": config.sha256(),
            "grammar": GRAMMAR,
            "stats": generated.stats,
            "files": {PROGRAMS: digest},
        }
        _write(staging, MANIFEST, _manifest_text(manifest))
    return generated


def write_augmented(data_dir: Path, manifest: dict[str, Any], pools: Iterable[dict[str, Any]],
                    dropped: list[str]) -> int:
    """Replace `data_dir` by a copy with `fewshots.jsonl` and the manifest's `augment` section added; returns
    how many pools it wrote. `pools` is written as it is consumed; `dropped` is read after (its producer may
    fill it meanwhile), and an error `pools` raises leaves `data_dir` as it was."""
    clean_stale(data_dir.parent)
    with staged_dir(data_dir) as staging:
        shutil.copyfile(data_dir / PROGRAMS, staging / PROGRAMS)
        digest, count = _write_rows(staging, FEWSHOTS, pools)
        manifest = {**manifest, "files": {**manifest["files"], FEWSHOTS: digest},
                    "augment": {"python": platform.python_version(), "programs": count, "dropped": dropped}}
        _write(staging, MANIFEST, _manifest_text(manifest))
    return count


def _missing(path: Path) -> LevanteError:
    hint = "run `levante-tasks l0 augment`" if path.name == FEWSHOTS else "run `levante-tasks l0 generate`"
    return LevanteError(f"{display_path(path)}: no such file ({hint})")


def _read_text(path: Path) -> str:
    text = read_optional_text(path)
    if text is None:
        raise _missing(path)
    return text


def read_manifest(data_dir: Path) -> dict[str, Any]:
    """The manifest, checked for the fields readers rely on."""
    path = data_dir / MANIFEST
    try:
        manifest = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise LevanteError(f"{display_path(path)}: invalid JSON ({exc.msg}, line {exc.lineno})") from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or manifest.get("schema") != SCHEMA:
        raise LevanteError(f"{display_path(path)}: not an L0 dataset manifest (schema {SCHEMA})")
    return manifest


def manifest_config(data_dir: Path, manifest: dict[str, Any]) -> GenConfig:
    """The generator config recorded in the manifest."""
    try:
        return from_mapping(manifest.get("config"))
    except ConfigError as exc:
        raise LevanteError(f"{display_path(data_dir / MANIFEST)}: config: {exc}") from None


def read_rows(data_dir: Path, manifest: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The rows of one data file, after checking its sha256 against the manifest."""
    return list(iter_rows(data_dir, manifest, name))


def iter_rows(data_dir: Path, manifest: dict[str, Any], name: str,
              wanted: Callable[[str], bool] | None = None) -> Iterator[dict[str, Any]]:
    """The rows of one data file, one at a time, after checking the whole file's sha256 against the manifest
    (read in chunks); with `wanted`, only the rows whose raw JSON line it accepts are parsed and yielded."""
    path = data_dir / name
    expected = manifest["files"].get(name)
    if expected is None:
        hint = "run `levante-tasks l0 augment`" if name == FEWSHOTS else "regenerate it"
        raise LevanteError(f"{display_path(data_dir / MANIFEST)}: lists no {name} ({hint})")
    if _file_sha256(path) != expected:
        raise LevanteError(f"{display_path(path)}: does not match its sha256 in {MANIFEST} (edited or damaged)")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if wanted is not None and not wanted(line):
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LevanteError(f"{display_path(path)}: line {number}: invalid JSON ({exc.msg})") from None
            if not isinstance(row, dict) or "id" not in row:
                raise LevanteError(f"{display_path(path)}: line {number}: expected an object with an id")
            yield row


def _file_sha256(path: Path) -> str:
    """The file's sha256 (filehash); a missing file is named with the step that writes it."""
    try:
        return sha256_file(path)
    except FileNotFoundError:
        raise _missing(path) from None
    except OSError as exc:
        raise LevanteError(f"{display_path(path)}: {problem_text(exc)}") from None
