"""The theory-of-mind task (stories and questions answered with words): its catalogue row."""

from levante_tasks.schema.task_info import TaskInfo

TASK = TaskInfo(
    "theory-of-mind", "tom", "levante_theory_of_mind", version=2, image_options=False, irt_by_language=True,
    measures="Theory of mind: short stories followed by questions about what a character believes (false belief), "
             "feels (emotion reasoning) or will do, with reality-check questions; answers are words "
             "(hostile-attribution items have no normative answer and are left out).",
)
