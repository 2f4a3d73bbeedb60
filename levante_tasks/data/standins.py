"""Stand-in images for a release that lacks some pictures (the public sample ships vocab images only).

`levante-tasks standins` copies `<base>/<version>/` to `<out>/<version>/` and draws a labelled PNG for every
image the manifest references but the release lacks: option images of picture tasks and `prompt_image`
stimuli. Each stand-in shows its key as text on a colour derived from the key, so options stay distinct and a
model can in principle tell them apart; results on stand-ins test the pipeline, not the model's vision.
Every stand-in carries the PNG text tag `levante-tasks stand-in`, and `STAND-INS.md` lists them.

Nothing good is lost: the copy is built in a hidden staging folder next to `<out>/<version>/` and swapped in
only when complete (a killed run's leftovers are cleaned by the next run); `--out` may not overlap the release,
the version must be one plain folder name, and an existing `<out>/<version>/` is replaced only if it is itself
a stand-in release (holds STAND-INS.md). Symlinks leaving the release and unreadable folders stop the run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont, PngImagePlugin

from levante_tasks.atomic import clean_stale, staged_dir, write_text
from levante_tasks.data.items import option_kind
from levante_tasks.data.manifest import read_manifest
from levante_tasks.data.problems import ProblemLog
from levante_tasks.data.visuals import VisualIndex
from levante_tasks.errors import LevanteError, display_path, os_error
from levante_tasks.schema import layout
from levante_tasks.schema.markers import STANDIN_RELEASE_MARKER

TAG = "levante-tasks stand-in"
SIZE = 224
MARKER = STANDIN_RELEASE_MARKER


def referenced_images(release_root: Path) -> set[tuple[str, str]]:
    """(task, key) of every image the manifest needs: picture options and prompt images (not `TODO`)."""
    log = ProblemLog()
    needed: set[tuple[str, str]] = set()
    for row in read_manifest(release_root / layout.MANIFEST_FILE, log):
        if option_kind(row) == "image":
            needed.update((row.task, key) for key in row.options())
        prompt_image = row.get("prompt_image")
        if prompt_image and prompt_image != "TODO":
            needed.add((row.task, prompt_image))
    if log.file_problems():
        raise LevanteError(str(log.file_problems()[0]))
    return needed


def draw_standin(key: str) -> Image.Image:
    """A 224x224 card: the key as text on a colour derived from the key's sha256."""
    digest = hashlib.sha256(key.encode()).digest()
    background = tuple(64 + b % 160 for b in digest[:3])
    image = Image.new("RGB", (SIZE, SIZE), background)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=18)
    lines = [key[i:i + 16] for i in range(0, len(key), 16)][:6]
    draw.multiline_text((SIZE // 2, SIZE // 2), "\n".join(lines), fill="black", font=font, anchor="mm",
                        align="center")
    return image


def check_version_name(version: str) -> None:
    """Refuse version names that are not one plain folder level (`..`, `.`, `a/b`, hidden names, empty)."""
    if not layout.is_version_name(version):
        raise LevanteError(f"--version {version!r}: not a usable version folder name (one plain folder name, "
                           "not starting with '.')")


def check_folders(base: Path, version: str, out: Path) -> Path:
    """The source release folder, after refusing an `--out` that overlaps the release (either way round)."""
    source = base / version
    try:
        (source / layout.MANIFEST_FILE).stat()
    except (FileNotFoundError, NotADirectoryError):
        raise LevanteError(f"{version}/manifest.csv: not found under the release base") from None
    except OSError as exc:
        raise os_error(exc, "reading the release") from None
    real_base, real_source, real_out = base.resolve(), source.resolve(), out.resolve()
    real_target = real_out / version
    if real_out.is_relative_to(real_base) or real_out.is_relative_to(real_source):
        raise LevanteError(f"--out {display_path(out)}: inside the release base; choose a folder outside it")
    if real_target.is_relative_to(real_source) or real_source.is_relative_to(real_target):
        raise LevanteError(f"--out {display_path(out)}: {version}/ there would overlap the source release; "
                           "choose another folder")
    target = out / version
    if target.is_symlink() or (target.exists() and not (target / MARKER).is_file()):
        raise LevanteError(f"{display_path(target)}: exists and is not a stand-in release (no {MARKER}); "
                           "not replaced")
    return source


def copy_release(source: Path, dest: Path, version: str) -> None:
    """Copy the files and folders of `source` into the existing folder `dest` (contents; modes per umask).

    A symlink is copied as the file it points to if that file is inside the release; one that leaves the
    release, points at a folder or at nothing stops the copy, as does any special file or unreadable entry.
    """
    real_root = source.resolve()
    pending = [Path()]
    while pending:
        rel = pending.pop()
        (dest / rel).mkdir(exist_ok=True)
        with os.scandir(source / rel) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                item = rel / entry.name
                where = f"{version}/{item.as_posix()}"
                if entry.is_symlink():
                    real = Path(os.path.realpath(entry.path))
                    if not real.is_relative_to(real_root):
                        raise LevanteError(f"{where}: symlink points outside the release; not copied "
                                           "(put the file itself in the release)")
                    if not real.exists():
                        raise LevanteError(f"{where}: symlink points at nothing")
                    if real.is_dir():
                        raise LevanteError(f"{where}: symlink to a folder; not copied (put the folder itself "
                                           "in the release)")
                if entry.is_dir(follow_symlinks=False):
                    pending.append(item)
                elif entry.is_file():
                    shutil.copyfile(entry.path, dest / item)
                else:
                    raise LevanteError(f"{where}: not a regular file or folder")


def draw_missing(release_root: Path) -> list[str]:
    """Draw a stand-in for every referenced image the release lacks; returns their release-relative paths."""
    index = VisualIndex(release_root)
    made: list[str] = []
    info = PngImagePlugin.PngInfo()
    info.add_text("Source", TAG)
    for task, key in sorted(referenced_images(release_root)):
        if index.find(task, key) is not None:
            continue
        if not key or key.startswith(".") or any(c in key for c in "/\\\0"):
            raise LevanteError(f"manifest.csv: image key {key!r} of task {task} is not a plain file name")
        rel = f"{layout.VISUAL_DIR}/{task}/{key}.png"
        (release_root / rel).parent.mkdir(parents=True, exist_ok=True)
        draw_standin(key).save(release_root / rel, format="PNG", pnginfo=info)
        made.append(rel)
    return made


def write_standin_release(base: Path, version: str, out: Path) -> list[str]:
    """Copy the release and add stand-ins for missing images; returns the stand-in paths (release-relative).

    Built in a staging folder and swapped in whole: on any failure the earlier `<out>/<version>/` is untouched.
    """
    check_version_name(version)
    base, out = Path(base), Path(out)
    source = check_folders(base, version, out)
    try:
        clean_stale(out)
        with staged_dir(out / version) as staging:
            copy_release(source, staging, version)
            made = draw_missing(staging)
            listing = "\n".join(f"- {rel}" for rel in made)
            write_text(staging / MARKER, f"# Stand-in images ({TAG})\n\nDrawn by `levante-tasks standins` for "
                       f"images the release lacks; not LEVANTE's pictures.\n\n{listing}\n")
    except OSError as exc:  # staged_dir names the folder being written when the error names no file
        raise os_error(exc, "writing the stand-in release") from None
    return made


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `standins` subcommand."""
    parser = subparsers.add_parser(
        "standins", help="copy a release and draw stand-ins for its missing images",
        description="Copy a local release to --out and draw a labelled picture for every image it lacks, so a "
                    "partial release (such as a sample with vocab pictures only) runs end to end. Results on "
                    "stand-ins test the pipeline, not a model's vision. Then run `levante-tasks prepare --release "
                    "OUT`. Details: docs/prepare.md.")
    parser.add_argument("--release", required=True, help="local release base holding <version>/")
    parser.add_argument("--version", required=True, help="release version folder")
    parser.add_argument("--out", required=True, help="new release base to write (<out>/<version>/)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the stand-in release and say how many images were drawn."""
    made = write_standin_release(Path(args.release), args.version, Path(args.out))
    print(f"{args.version}: {len(made)} stand-in image(s) drawn under {Path(args.out).name}/{args.version}/visual/")
    return 0
