"""Images on a card: Markdown images in the card sent to the model as image blocks.

Bug reports come as screenshots. A card that shows one (`![the total](shots/total.png)`) hands
it to the model with the card, in the first user message. Only files inside the repository are
read (a card is repository text, and `../../home/me/.ssh/id_rsa.png` must not leave the machine),
only regular files (`read_regular`), at most 5 MB each (the Messages API's limit), and only
PNG, JPEG, GIF and WebP, known by their first bytes, not by their names. Whatever is skipped is
said in the run's warnings. The images are copied into the run's folder, so a resume sends the
very same bytes even after the files changed (`kept_blocks`).
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from cardrunner.config.readfile import read_regular

MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_IMAGES = 20
FOLDER = "card-images"
"""Where in the run's folder the images are kept for a resume."""

_IMAGE = re.compile(r"!\[[^\]\n]*\]\(\s*(?:<([^>\n]+)>|([^)\s]+))(?:\s+\"[^\"\n]*\")?\s*\)")
_SUFFIX = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


def sniff(data: bytes) -> str | None:
    """The media type the bytes are, by their magic number (None: not one the API takes)."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


@dataclass(frozen=True)
class CardImage:
    """One image of a card, checked: where it is in the repository and what it is."""

    path: str
    media_type: str
    data: bytes

    def block(self) -> dict[str, Any]:
        return image_block(self.media_type, self.data)


def image_block(media_type: str, data: bytes) -> dict[str, Any]:
    """The Messages API's image block for `data`."""
    encoded = base64.b64encode(data).decode("ascii")
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": media_type, "data": encoded},
    }


def card_images(text: str, card_path: Path, root: Path) -> tuple[list[CardImage], list[str]]:
    """The images `text` (a card) shows, checked, and a note for each one left out."""
    images: list[CardImage] = []
    notes: list[str] = []
    top = root.resolve()
    for match in _IMAGE.finditer(text):
        ref = unquote(match.group(1) or match.group(2))
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", ref):
            notes.append(f"card image {ref}: only files in the repository are sent, not links")
            continue
        if len(images) == MAX_IMAGES:
            notes.append(f"card images: only the first {MAX_IMAGES} are sent")
            break
        image, why = _read(ref, card_path, top)
        if image is None:
            notes.append(f"card image {ref}: {why}; it is not sent")
        elif all(i.path != image.path for i in images):
            images.append(image)
    return images, notes


def image_count(text: str) -> int:
    """How many images a run of the card `text` would send at most (its local references, up
    to `MAX_IMAGES`), without reading them: what a cost forecast counts."""
    refs = [unquote(m.group(1) or m.group(2)) for m in _IMAGE.finditer(text)]
    local = {r for r in refs if not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", r)}
    return min(len(local), MAX_IMAGES)


def _read(ref: str, card_path: Path, top: Path) -> tuple[CardImage | None, str]:
    """One image reference, resolved against the card's folder (or the root for `/…`)."""
    base = top if ref.startswith("/") else card_path.parent
    target = (base / ref.lstrip("/")).resolve()
    if not target.is_relative_to(top):
        return None, "it lies outside the repository"
    rel = target.relative_to(top)
    if rel.parts and rel.parts[0] in (".git", ".cardrunner"):
        return None, "it lies in git's or cardrunner's own folder"
    try:
        data = read_regular(target, MAX_IMAGE_BYTES)
    except FileNotFoundError:
        return None, "no such file"
    except OSError as exc:  # not a regular file, or over 5 MB
        return None, str(exc).replace(str(target), rel.as_posix())
    media_type = sniff(data)
    if media_type is None:
        return None, "not a PNG, JPEG, GIF or WebP image (by its contents)"
    return CardImage(rel.as_posix(), media_type, data), ""


def keep_images(images: list[CardImage], run_dir: Path) -> list[dict[str, str]]:
    """Copy the images into the run's folder; their records for the log's `start` line."""
    if not images:
        return []
    folder = run_dir / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    records = []
    for n, image in enumerate(images):
        name = f"{n}.{_SUFFIX[image.media_type]}"
        (folder / name).write_bytes(image.data)
        records.append({"path": image.path, "file": name, "media_type": image.media_type})
    return records


def kept_blocks(records: list[dict[str, str]], run_dir: Path) -> list[dict[str, Any]]:
    """The image blocks a run sent, from its folder (a resume sends them again, byte for byte)."""
    return [
        image_block(r["media_type"], (run_dir / FOLDER / r["file"]).read_bytes()) for r in records
    ]
