"""What a new run tells the model besides cardrunner's rules and the card's text.

The project's instructions (AGENTS.md, `run/instructions.py`) go into the system prompt and the
card's images (`run/images.py`) into the first message; both are read once, when the run
begins, and kept in its log and folder, so a resume sends exactly what the run began with even
when the files have changed since.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cardrunner.agent.model import Block
from cardrunner.card.card import Card
from cardrunner.run.images import card_images, keep_images
from cardrunner.run.instructions import ProjectInstructions, read_instructions
from cardrunner.run.prepare import PreparedRun


@dataclass
class Told:
    """What a new run tells the model besides cardrunner's rules and the card's text: the
    project's instructions (in `system`) and the card's images (in the first message)."""

    system: str = ""
    blocks: list[Block] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    instructions: list[str] = field(default_factory=list)
    images: list[dict[str, str]] = field(default_factory=list)


def told_for(prepared: PreparedRun, card: Card, root: Path, run_dir: Path) -> Told:
    """Read once for a new run; a resume sends what its log kept (system prompt, images)."""
    if (resume := prepared.resume) is not None:
        return Told(instructions=resume.instructions, images=resume.images)
    project = project_instructions(prepared, root)
    images, notes = card_images(card.text, card.path, prepared.options.root)
    kept = keep_images(images, run_dir)
    blocks = [i.block() for i in images]
    return Told(project.text, blocks, [*project.notes, *notes], project.listed, kept)


def project_instructions(prepared: PreparedRun, root: Path) -> ProjectInstructions:
    """The project's AGENTS.md files, unless `[agent] project_instructions` is off."""
    agent = prepared.options.settings.agent
    if not agent.project_instructions:
        return ProjectInstructions()
    write = prepared.options.settings.paths.write
    return read_instructions(root, write, agent.instructions_max_bytes)
