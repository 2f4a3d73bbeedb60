"""The matrix-reasoning task (pattern matrices): its catalogue row."""

from levante_tasks.schema.task_info import TaskInfo

TASK = TaskInfo(
    "matrix-reasoning", "matrix", "levante_matrix_reasoning", version=1, image_options=True,
    measures="Non-verbal abstract reasoning: the child picks the picture that completes a pattern matrix.",
)
