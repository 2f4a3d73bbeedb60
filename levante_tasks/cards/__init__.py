"""Croissant cards: the JSON-LD building blocks and their check."""
