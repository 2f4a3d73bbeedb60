"""The matrix-reasoning task's synthetic builder: pattern matrices (docs/synth.md).

Matrices follow row/column rules (shape by row, colour by column, count by a diagonal rule on the hardest ones);
each distractor breaks exactly one rule.
"""

from __future__ import annotations

import numpy as np

from levante_tasks.synth import draw
from levante_tasks.synth.items import Item, TaskItems, answer_with
from levante_tasks.synth.items_language import pick
from levante_tasks.synth.task import SynthTask
from levante_tasks.synth.translations import TranslationRow, prompt_rows

MATRIX_SHAPES = ("circle", "square", "triangle", "star", "diamond", "cross")
MATRIX_COLOURS = ("red", "blue", "green", "yellow", "purple", "orange")
MATRIX_PROMPT = f"<prompt_image> Choose the best option to fill in the blank. {answer_with(4, 'image')}"


def _matrix_item(rng: np.random.Generator, out: TaskItems, k: int, size: int, count_rule: bool) -> Item:
    shapes = pick(rng, MATRIX_SHAPES, size + 1)
    colours = pick(rng, MATRIX_COLOURS, size + 1)

    def count(i: int, j: int) -> int:
        return (i + j) % 3 + 1 if count_rule else 1

    last = size - 1
    grid = [[draw.matrix_cell(shapes[i], colours[j], count(i, j)) for j in range(size)] for i in range(size)]
    grid[last][last] = None
    stem = f"sm{k}"
    out.images[f"{stem}_M"] = draw.matrix_image(grid)
    right = (shapes[last], colours[last], count(last, last))
    wrong_count = count(last, last) % 3 + 1
    distractors = {
        "T2": (shapes[last - 1], colours[last], count(last, last)),  # breaks the row (shape) rule
        "T3": (shapes[last], colours[last - 1], count(last, last)),  # breaks the column (colour) rule
        # breaks the count rule when there is one, otherwise both rules with an unseen shape and colour
        "T4": (shapes[last], colours[last], wrong_count) if count_rule else (shapes[size], colours[size], 1),
    }
    out.images[f"{stem}_T1_md"] = draw.matrix_cell(*right, size=128)
    for tag, cell in distractors.items():
        out.images[f"{stem}_{tag}_md"] = draw.matrix_cell(*cell, size=128)
    practice = k == 0
    return Item(
        task="matrix-reasoning", item_uid=f"{stem}_M" if practice else f"matrix_synth_mat{k}",
        trial_type="practice" if practice else "Matrix Reasoning",
        prompt="See this big puzzle? It's missing a piece! Which piece goes in the puzzle?" if practice
        else "Choose the best pattern to fill in the blank.",
        item=f"{stem}_M", answer=f"{stem}_T1_md", alternatives=(f"{stem}_T4_md", f"{stem}_T2_md", f"{stem}_T3_md"),
        chance=0.25, prompt_phrase=None, prompt_image=f"{stem}_M", full_prompt=MATRIX_PROMPT,
        difficulty=None if practice else -1.2 + 1.0 * (size == 3) + 1.3 * count_rule,
    )


def build_matrix(rng: np.random.Generator) -> TaskItems:
    """1 practice + 15 test matrices: 2x2 (6), 3x3 (5), 3x3 with a count rule (4); answers are `*_T1_*`."""
    out = TaskItems("matrix-reasoning", [])
    plan = [(2, False)] * 7 + [(3, False)] * 5 + [(3, True)] * 4
    out.items = [_matrix_item(rng, out, k, size, rule) for k, (size, rule) in enumerate(plan)]
    return out


PROMPTS = {  # each prompt in German and Spanish (made up for the synthetic release)
    "See this big puzzle? It's missing a piece! Which piece goes in the puzzle?": {
        "de": "Siehst du dieses große Puzzle? Ein Teil fehlt! Welches Teil gehört hinein?",
        "es-CO": "¿Ves este rompecabezas grande? ¡Le falta una pieza! ¿Qué pieza va en el rompecabezas?"},
    "Choose the best pattern to fill in the blank.": {
        "de": "Wähle das Muster, das in die Lücke passt.",
        "es-CO": "Escoge el patrón que completa el espacio en blanco."},
}


def translate_matrix(task: TaskItems) -> list[TranslationRow]:
    """One row per distinct prompt."""
    return prompt_rows(task.items, "matrix-reasoning, Pattern Matching", "matrix-reasoning-prompt", PROMPTS)


SYNTH = SynthTask(build_matrix, translate=translate_matrix)
