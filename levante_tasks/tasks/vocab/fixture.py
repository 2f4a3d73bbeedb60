"""The vocab task's test fixture items (levante_tasks.testing.fixture_data)."""

from levante_tasks.testing.fixture_spec import FixtureSpec

SPEC = FixtureSpec(("test",), (4,), "image", False, 9, first_number=1)
