"""A card's images: which are sent, and why the others are not (the path guard, size, type)."""

from __future__ import annotations

import os
from pathlib import Path

from cardrunner.apirules.validation import validate_request
from cardrunner.card.images import MAX_IMAGE_BYTES, card_images, image_block

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 32
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 16


def test_images_inside_the_repository_are_read_by_their_bytes(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "cards" / "shots").mkdir(parents=True)
    (root / "cards" / "shots" / "total.png").write_bytes(PNG)
    (root / "docs").mkdir()
    (root / "docs" / "photo.dat").write_bytes(JPEG)  # a name says nothing: its bytes do
    (root / "docs" / "a b.webp").write_bytes(WEBP)
    text = (
        '![total](shots/total.png "the bug")\n![photo](/docs/photo.dat)\n'
        "![space](<../docs/a b.webp>) ![again](shots/total.png)\n"
    )
    images, notes = card_images(text, root / "cards" / "bug.md", root)
    assert [(i.path, i.media_type) for i in images] == [
        ("cards/shots/total.png", "image/png"),
        ("docs/photo.dat", "image/jpeg"),
        ("docs/a b.webp", "image/webp"),
    ]
    assert notes == []
    assert images[0].data == PNG


def test_what_is_not_sent_is_said(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "cards").mkdir(parents=True)
    (tmp_path / "secret.png").write_bytes(PNG)
    (root / "cards" / "big.png").write_bytes(PNG + b"\x00" * MAX_IMAGE_BYTES)
    (root / "cards" / "text.png").write_text("not an image")
    os.mkfifo(root / "cards" / "pipe.png")
    (root / "cards" / "link.png").symlink_to(tmp_path / "secret.png")
    text = (
        "![a](../../secret.png) ![b](big.png) ![c](text.png) ![d](pipe.png) ![e](link.png) "
        "![f](https://example.com/x.png) ![g](missing.png)"
    )
    images, notes = card_images(text, root / "cards" / "bug.md", root)
    assert images == []
    said = "\n".join(notes)
    assert said.count("outside the repository") == 2, said  # the path and the symlink
    assert "big.png" in said and "limit" in said
    assert "text.png: not a PNG, JPEG, GIF or WebP image" in said
    assert "pipe.png" in said and "FIFO" in said
    assert "not links" in said and "missing.png: no such file" in said


def body(block: dict[str, object]) -> dict[str, object]:
    content = [{"type": "text", "text": "the card"}, block]
    return {
        "model": "claude-sonnet-5-5",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": content}],
    }


def test_the_strict_fake_takes_a_card_image_and_refuses_a_wrong_one() -> None:
    assert validate_request(body(image_block("image/png", PNG))) == []
    wrong = validate_request(body(image_block("image/gif", PNG)))
    assert any("does not match the provided media type image/gif" in e for e in wrong)
    bmp = validate_request(body(image_block("image/bmp", b"BM")))
    assert any("media_type: must be one of" in e for e in bmp)
    broken = image_block("image/png", PNG)
    broken["source"]["data"] = "not base64!"  # type: ignore[index]
    assert any("invalid base64" in e for e in validate_request(body(broken)))
