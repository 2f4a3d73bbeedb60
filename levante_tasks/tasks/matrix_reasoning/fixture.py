"""The matrix-reasoning task's test fixture items (levante_tasks.testing.fixture_data)."""

from levante_tasks.testing.fixture_spec import FixtureSpec

SPEC = FixtureSpec(("Matrix Reasoning",), (4,), "image", True, 6, first_number=28)
