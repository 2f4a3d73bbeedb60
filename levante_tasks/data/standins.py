"""Stand-in images for a release that lacks some pictures (the public sample ships vocab images only).

`levante-tasks standins` copies `<base>/<version>/` to `<out>/<version>/` and draws a labelled PNG for every
image the manifest references but the release lacks: option images of picture tasks and `prompt_image`
stimuli. Each stand-in shows its key as text on a colour derived from the key, so options stay distinct and a
model can in principle tell them apart; results on stand-ins test the pipeline, not the model's vision.
Every stand-in carries the PNG text tag `levante-tasks stand-in`, and `STAND-INS.md` lists them.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont, PngImagePlugin

from levante_tasks.atomic import write_text
from levante_tasks.data.items import option_kind
from levante_tasks.data.manifest import read_manifest
from levante_tasks.data.problems import ProblemLog
from levante_tasks.data.visuals import VisualIndex
from levante_tasks.errors import LevanteError

TAG = "levante-tasks stand-in"
SIZE = 224


def referenced_images(release_root: Path) -> set[tuple[str, str]]:
    """(task, key) of every image the manifest needs: picture options and prompt images (not `TODO`)."""
    log = ProblemLog()
    needed: set[tuple[str, str]] = set()
    for row in read_manifest(release_root / "manifest.csv", log):
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


def write_standin_release(base: Path, version: str, out: Path) -> list[str]:
    """Copy the release and add stand-ins for missing images; returns the stand-in paths (release-relative)."""
    source = base / version
    if not (source / "manifest.csv").is_file():
        raise LevanteError(f"{version}/manifest.csv: not found under the release base")
    target = out / version
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    index = VisualIndex(target)
    made: list[str] = []
    info = PngImagePlugin.PngInfo()
    info.add_text("Source", TAG)
    for task, key in sorted(referenced_images(target)):
        if index.find(task, key) is None:
            rel = f"visual/{task}/{key}.png"
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            draw_standin(key).save(target / rel, format="PNG", pnginfo=info)
            made.append(rel)
    listing = "\n".join(f"- {rel}" for rel in made)
    write_text(target / "STAND-INS.md", f"# Stand-in images ({TAG})\n\nDrawn by `levante-tasks standins` for "
               f"images the release lacks; not LEVANTE's pictures.\n\n{listing}\n")
    return made


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `standins` subcommand."""
    parser = subparsers.add_parser("standins", help="copy a release and draw stand-ins for its missing images",
                                   description=__doc__)
    parser.add_argument("--release", required=True, help="local release base holding <version>/")
    parser.add_argument("--version", required=True, help="release version folder")
    parser.add_argument("--out", required=True, help="new release base to write (<out>/<version>/)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the stand-in release and say how many images were drawn."""
    made = write_standin_release(Path(args.release), args.version, Path(args.out))
    print(f"{args.version}: {len(made)} stand-in image(s) drawn under {Path(args.out).name}/{args.version}/visual/")
    return 0
