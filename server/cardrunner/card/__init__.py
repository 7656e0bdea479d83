"""Cards: the Markdown files in `cards/` that say what to change and how to know it works.

Entry point: `card.card` (`Card`, `load_card`, `write_card`).
"""
