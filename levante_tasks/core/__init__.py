"""What both harness faces share: prepared docs, option orders, controls, prompts, images, the doc hooks, answer
parsing and records. Imports no harness (tests/test_import_rules.py)."""
