"""The egma-math task's test fixture items (levante_tasks.testing.fixture_data)."""

from levante_tasks.testing.fixture_spec import FixtureSpec

SPEC = FixtureSpec(kind="math", first_number=46)
