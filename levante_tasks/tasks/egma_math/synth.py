"""The egma-math task's synthetic builder: symbolic text-option items, counting and dot pictures, number lines.

Text distractors are near misses drawn around the answer (so the answer's rank among the options is random and
its wording is like theirs); picture options are dot cards that differ in how many dots they show.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from levante_tasks.synth import draw
from levante_tasks.synth.items import Item, TaskItems, answer_with
from levante_tasks.synth.task import SynthTask
from levante_tasks.synth.translations import TranslationRow, prompt_rows

GRID = [(38 + 49 * (k % 4), 38 + 49 * (k // 4)) for k in range(16)]  # 4x4 cell centres on a 224 canvas


def near_misses(rng: np.random.Generator, answer: int, k: int, low: int = 0, spread: int = 4) -> list[str]:
    """k distinct integers within `spread` of the answer (not the answer, not below `low`), in random order."""
    pool = [v for v in range(answer - spread, answer + spread + 1) if v != answer and v >= low]
    return [str(pool[i]) for i in rng.choice(len(pool), size=k, replace=False)]


def _item(uid: str, trial_type: str, prompt: str, item: str | None, answer: str, alts: list[str],
          phrase: str | None, full: str | None, difficulty: float | None, image: str | None = None) -> Item:
    chance = {2: 0.5, 3: 0.33, 4: 0.25}[len(alts) + 1]
    return Item(task="egma-math", item_uid=uid, trial_type=trial_type, prompt=prompt, item=item, answer=answer,
                alternatives=tuple(alts), chance=chance, prompt_phrase=phrase, prompt_image=image,
                full_prompt=full, difficulty=difficulty)


def _arithmetic(rng: np.random.Generator, out: TaskItems) -> None:
    specs = [("Addition", "add", "+", "Add"), ("Subtraction", "subtract", "-", "Subtract"),
             ("Multiplication", "multiply", "x", "Multiply")]
    # Disjoint operand ranges per level keep item_uids unique.
    ranges = {"add": [(1, 4), (5, 9), (10, 19)], "subtract": [(2, 6), (7, 12), (13, 25)],
              "multiply": [(1, 4), (5, 9)]}
    base = {"add": -1.4, "subtract": -0.9, "multiply": 0.2}
    for trial_type, word, sign, verb in specs:
        for level, (lo, hi) in enumerate(ranges[word]):
            a, b = (int(v) for v in rng.integers(lo, hi + 1, size=2))
            if word == "subtract" and b > a:
                a, b = b, a
            answer = {"add": a + b, "subtract": a - b, "multiply": a * b}[word]
            phrase = f"{a}{sign}{b}"
            full = f"{verb} the numbers and choose the correct answer: <prompt_phrase>. {answer_with(4, 'option')}"
            out.items.append(_item(f"math_{word}_{a}_{b}", trial_type,
                                   f"{verb} the numbers and choose the correct answer.", phrase, str(answer),
                                   near_misses(rng, answer, 3), phrase, full, base[word] + 0.6 * level))


def _fractions(rng: np.random.Generator, out: TaskItems) -> None:
    for level, denominator in enumerate(rng.choice([4, 5, 6, 8], size=2, replace=False)):
        d = int(denominator)
        a, b = (int(v) for v in rng.choice(np.arange(1, d // 2 + 1), size=2))
        answer = Fraction(a + b, d)
        text = f"{a + b}/{d}"
        wrong = [f"{a + b}/{2 * d}", f"{a + b + 1}/{d}", f"{max(a + b - 1, 1)}/{d}", f"{a * b}/{d}"]
        alts = list(dict.fromkeys(w for w in wrong if w != text and Fraction(w) != answer))[:3]
        phrase = f"{a}/{d}+{b}/{d}"
        full = f"Add the numbers and choose the correct answer: <prompt_phrase>. {answer_with(4, 'option')}"
        alts = [alts[i] for i in rng.permutation(len(alts))]
        out.items.append(_item(f"math_fraction_{a}{d}_{b}{d}", "Fraction",
                               "Add the numbers and choose the correct answer.", phrase, text, alts, phrase, full,
                               1.2 + 0.4 * level))


def _identify_compare_missing(rng: np.random.Generator, out: TaskItems) -> None:
    for level, n in enumerate(sorted(int(v) for v in rng.choice(np.arange(1, 20), size=2, replace=False))):
        full = f"Choose the same number: <prompt_phrase>. {answer_with(4, 'option')}"
        out.items.append(_item(f"math_identify_{n}", "Number Identification", "Choose the number you hear.",
                               str(n), str(n), near_misses(rng, n, 3, low=1), str(n), full, -2.2 + 0.5 * level))
    for level, top in enumerate((9, 20, 60)):
        a, b = (int(v) for v in rng.choice(np.arange(1, top + 1), size=2, replace=False))
        full = f"Choose which is larger. {answer_with(2, 'option')}"
        out.items.append(_item(f"math_compare_{a}_{b}", "Number Comparison", "Which number is larger?",
                               f"{a}, {b}", str(max(a, b)), [str(min(a, b))], None, full, -1.8 + 0.5 * level))
    for level, step in enumerate((1, int(rng.choice([2, 5, 10])))):
        start = int(rng.integers(1, 6)) * step
        seq = [start + k * step for k in range(4)]
        gap = int(rng.integers(1, 4))
        shown = ", ".join("_" if k == gap else str(v) for k, v in enumerate(seq))
        uid = "math_missing_" + "_".join("x" if k == gap else str(v) for k, v in enumerate(seq))
        # Distractors stay on the sequence's grid (multiples of the step), so none is ruled out by its form.
        alts = [str(int(v) * step) for v in near_misses(rng, seq[gap] // step, 3, low=0, spread=3)]
        full = f"Choose the number that goes in the blank: <prompt_phrase>. {answer_with(4, 'option')}"
        out.items.append(_item(uid, "Missing Number", "What number goes in the blank?", shown, str(seq[gap]),
                               alts, shown, full, -0.4 + 0.8 * level))


def _pictures(rng: np.random.Generator, out: TaskItems) -> None:
    for n in sorted(int(v) for v in rng.choice(np.arange(2, 9), size=2, replace=False)):
        stem = f"{n}apples"
        out.images[stem] = draw.dots_image([GRID[i] for i in rng.choice(16, size=n, replace=False)], "apple")
        full = f"<prompt_image> How many <prompt_phrase> is this? {answer_with(3, 'option')}"
        out.items.append(_item(f"counting-afc-{n}", "Counting AFC", "How many apples is this?", stem, str(n),
                               near_misses(rng, n, 2, low=1, spread=3), "apples", full, -1.6 + 0.1 * n,
                               image=stem))
    for k, (more, fewer) in enumerate(((7, 3), (9, 7)), start=1):
        stems = [f"{more}dots", f"{fewer}dots"]
        for stem, count in zip(stems, (more, fewer), strict=True):
            out.images.setdefault(stem, draw.dots_image([GRID[i] for i in rng.choice(16, size=count,
                                                                                        replace=False)]))
        full = f"Which image has more <prompt_phrase>? {answer_with(2, 'image')}"
        out.items.append(_item(f"ns-num-comp-{k}", "Non-symbolic Number Comparison", "Which card has more dots?",
                               None, stems[0], stems[1:], "dots", full, -1.5 + 0.9 * (k - 1)))


def _number_lines(rng: np.random.Generator, out: TaskItems) -> None:
    ticks = [int(v) for v in rng.choice(np.arange(1, 10), size=2, replace=False)] + [int(rng.integers(1, 10))]
    for level, (high, tick) in enumerate(zip((10, 10, 100), ticks, strict=True)):
        step = high // 10
        target = tick * step
        stem = f"number-line-{target}-{high}"
        out.images[stem] = draw.number_line_image(target, 0, high)
        alts = near_misses(rng, target // step, 3, low=0, spread=3)
        alts = [str(int(a) * step) for a in alts if int(a) <= 10]
        while len(alts) < 3:  # near an end: fill from the far side
            alts.append(str(next(v * step for v in range(11) if str(v * step) not in alts and v * step != target)))
        full = f"<prompt_image> Choose the number that is marked on the number line. {answer_with(4, 'option')}"
        out.items.append(_item(f"math_line_{target}_{high}", "Number Line 4afc",
                               "Choose the number that is marked on the number line.", f"0,{high}", str(target),
                               alts, None, full, 0.4 + 0.4 * level, image=stem))
    for high in (10, 100, 1000):
        target = int(rng.integers(1, 10)) * high // 10 + (int(rng.integers(1, 10)) * high // 100 if high > 10 else 0)
        out.items.append(Item(task="egma-math", item_uid=f"math_slider_{target}_{high}",
                              trial_type="Number Line Slider", prompt="Move the line to mark the number.",
                              item=f"0,{high}", answer=str(target), alternatives=None, chance=0.1,
                              prompt_phrase=None, prompt_image=None, full_prompt=None, difficulty=None))


def build_math(rng: np.random.Generator) -> TaskItems:
    """27 items: identification, comparison, missing number, + - x, fractions, counting, dots, number lines."""
    out = TaskItems("egma-math", [])
    _identify_compare_missing(rng, out)
    _arithmetic(rng, out)
    _fractions(rng, out)
    _pictures(rng, out)
    _number_lines(rng, out)
    return out


PROMPTS = {  # each prompt in German and Spanish (made up for the synthetic release)
    "Choose the number you hear.": {"de": "Wähle die Zahl, die du hörst.", "es-CO": "Escoge el número que escuchas."},
    "Which number is larger?": {"de": "Welche Zahl ist größer?", "es-CO": "¿Qué número es más grande?"},
    "What number goes in the blank?": {"de": "Welche Zahl gehört in die Lücke?",
                                       "es-CO": "¿Qué número va en el espacio?"},
    "Add the numbers and choose the correct answer.": {
        "de": "Rechne die Zahlen zusammen und wähle die richtige Antwort.",
        "es-CO": "Suma los números y elige la respuesta correcta."},
    "Subtract the numbers and choose the correct answer.": {
        "de": "Ziehe die Zahlen voneinander ab und wähle die richtige Antwort.",
        "es-CO": "Resta los números y elige la respuesta correcta."},
    "Multiply the numbers and choose the correct answer.": {
        "de": "Multipliziere die Zahlen und wähle die richtige Antwort.",
        "es-CO": "Multiplica los números y elige la respuesta correcta."},
    "How many apples is this?": {"de": "Wie viele Äpfel sind das?", "es-CO": "¿Cuántas manzanas hay?"},
    "Which card has more dots?": {"de": "Welche Karte hat mehr Punkte?", "es-CO": "¿Qué tarjeta tiene más puntos?"},
    "Choose the number that is marked on the number line.": {
        "de": "Wähle die Zahl, die auf dem Zahlenstrahl markiert ist.",
        "es-CO": "Escoge el número que está marcado en la recta numérica."},
    "Move the line to mark the number.": {"de": "Schiebe den Strich an die Stelle der Zahl.",
                                          "es-CO": "Mueve la línea para marcar el número."},
}


def translate_math(task: TaskItems) -> list[TranslationRow]:
    """One row per distinct prompt (LEVANTE's table has prompt rows for math, labelled `math`)."""
    return prompt_rows(task.items, "math", "math-prompt", PROMPTS)


SYNTH = SynthTask(build_math, translate=translate_math)
