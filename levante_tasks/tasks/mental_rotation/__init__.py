"""The mental-rotation task (rotated, not mirrored, shapes): its catalogue row."""

from levante_tasks.schema.task_info import TaskInfo

TASK = TaskInfo(
    "mental-rotation", "mrot", "levante_mental_rotation", version=1, image_options=True,
    measures="Mental rotation (visuospatial): the child picks the picture that is the target shape rotated, not "
             "mirrored (2D shapes, trial type 2, and 3D objects, trial type 3).",
)
