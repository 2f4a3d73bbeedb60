"""The egma-math task (early numeracy; choices and number-line sliders): its catalogue row and sub-types."""

from levante_tasks.schema.task_info import TaskInfo

MATH_SUBTYPES = (
    ("number_identification", ("Number Identification",)),
    ("number_comparison", ("Number Comparison",)),
    ("addition", ("Addition",)),
    ("subtraction", ("Subtraction",)),
    ("multiplication", ("Multiplication",)),
    ("fraction", ("Fraction",)),
    ("missing_number", ("Missing Number",)),
    ("counting", ("Counting", "Counting AFC")),
    ("non_symbolic", ("Non-symbolic Number Identification", "Non-symbolic Number Comparison")),
    ("number_line", ("Number Line 4afc",)),
    ("number_line_slider", ("Number Line Slider",)),
)

TASK = TaskInfo(
    "egma-math", "math", "levante_egma_math", version=2, image_options=False, subtypes=MATH_SUBTYPES,
    slider_subtypes=("number_line_slider",),
    measures="Early numeracy and math (items after the Early Grade Mathematics Assessment, EGMA): number "
             "identification and comparison, counting, missing numbers, arithmetic, fractions and number-line "
             "estimation (four choices, or placing a number on a line as a slider).",
)
