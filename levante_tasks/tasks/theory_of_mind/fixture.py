"""The theory-of-mind task's test fixture items (levante_tasks.testing.fixture_data): prompts start with a story."""

from levante_tasks.testing.fixture_spec import FixtureSpec

SPEC = FixtureSpec(("false_belief_question", "reality_check_question"), (2, 3, 4), "image", False, 9, first_number=19,
                   story="Here is a short story.")
