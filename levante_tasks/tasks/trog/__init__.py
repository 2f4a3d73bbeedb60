"""The trog task (receptive grammar): its catalogue row."""

from levante_tasks.schema.task_info import TaskInfo

TASK = TaskInfo(
    "trog", "trog", "levante_trog", version=1, image_options=True,
    measures="Receptive grammar (after the Test for Reception of Grammar, TROG): the child hears a sentence and "
             "picks the picture that matches it; the other pictures fit a different grammatical reading (negation, "
             "passives, relative clauses, prepositions, ...).",
)
