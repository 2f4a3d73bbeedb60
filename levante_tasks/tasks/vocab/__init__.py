"""The vocab task (receptive vocabulary): its catalogue row."""

from levante_tasks.schema.task_info import TaskInfo

TASK = TaskInfo(
    "vocab", "vocab", "levante_vocab", version=1, image_options=True, irt_by_language=True,
    measures="Receptive vocabulary: the child hears a word and picks the picture it names among four pictures.",
)
