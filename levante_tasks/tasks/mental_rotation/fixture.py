"""The mental-rotation task's test fixture items (levante_tasks.testing.fixture_data)."""

from levante_tasks.testing.fixture_spec import FixtureSpec

SPEC = FixtureSpec(("2", "3"), (2,), "image", True, 6, first_number=34)
