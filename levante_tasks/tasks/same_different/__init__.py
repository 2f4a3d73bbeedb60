"""The same-different-selection task (match a card in one dimension): its catalogue row."""

from levante_tasks.schema.task_info import TaskInfo

TASK = TaskInfo(
    "same-different-selection", "sds", "levante_same_different", version=1, image_options=True, repeated_uids=True,
    measures="Same-different selection (cognitive flexibility): the child picks the card that matches a sample in "
             "one dimension (shape, colour, size, number) and, in later blocks, picks pairs of cards that are the "
             "same in a new way each time.",
)
