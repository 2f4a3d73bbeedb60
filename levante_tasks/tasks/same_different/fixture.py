"""The same-different-selection task's test fixture items (levante_tasks.testing.fixture_data)."""

from levante_tasks.testing.fixture_spec import FixtureSpec

SPEC = FixtureSpec(("test-dimensions", "something-same-1"), (3, 4), "image", False, 6, first_number=40)
