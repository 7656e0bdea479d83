"""A small invoice editor: `model` holds the arithmetic, `app` the Textual screen."""
