"""The theory-of-mind task's synthetic builder: stories in the corpus item bank and the manifest rows made from them.

The corpus item bank's instruction rows carry the story, its test_response rows the questions; the manifest rows
are derived from it, 1:1 and in order, as in the real release.

A manifest full_prompt is the block's instruction sentences up to the question (the intro and transition lines
left out) + the question + the answer suffix. Options are word-keyed pictures that show the word.
"""

from __future__ import annotations

import numpy as np

from levante_tasks.synth import draw
from levante_tasks.synth.items import Item, TaskItems, answer_with
from levante_tasks.synth.task import SynthTask

CORPUS_COLUMNS = (
    "source", "block_index", "task", "trial_type", "assessment_stage", "audio_file", "prompt", "item",
    "orig_item_num", "answer", "response_alternatives", "chance_level", "item_id",
)
SOURCE = "levante-tasks-synthetic"

# Story steps: ("say", text) or (uid suffix, trial_type, question, answer, [distractors], b centre).
STORIES: list[tuple[str, str, list[tuple]]] = [
    ("ball", "theory-of-mind", [
        ("say", "Here is Leo. Leo put his ball in the basket and went outside to play."),
        ("say", "While Leo was outside, his sister took the ball out of the basket and put it in the box."),
        ("false_belief", "false_belief_question", "Where will Leo look for his ball first?", "basket", ["box"], 0.4),
        ("reality_check", "reality_check_question", "Where is the ball really?", "box", ["basket"], -1.6),
    ]),
    ("crayons", "theory-of-mind", [
        ("say", "Here is a crayon box. Nora opens it and finds buttons inside, not crayons! She closes the box."),
        ("say", "Then Omar comes in. Omar did not see inside the box."),
        ("false_belief", "false_belief_question", "What will Omar think is in the box?", "crayons", ["buttons"],
         0.8),
        ("reality_check", "reality_check_question", "What is really in the box?", "buttons", ["crayons"], -1.4),
        ("reality_check_2", "reality_check_question", "Did Omar see inside the box?", "no", ["yes"], -1.0),
    ]),
    ("cookies", "theory-of-mind", [
        ("say", "Here is Mia. Mia's dad puts the cookies in the jar, and Mia watches him."),
        ("say", "Mia goes to her room. While she is gone, dad moves the cookies to the drawer."),
        ("reality_check", "reality_check_question", "Did Mia see dad move the cookies?", "no", ["yes"], -0.8),
        ("say", "Now Mia comes back, and she wants a cookie."),
        ("false_belief", "false_belief_question", "Where will Mia look for the cookies?", "jar", ["drawer"], 0.9),
        ("reality_check_2", "reality_check_question", "Where are the cookies really?", "drawer", ["jar"], -1.2),
    ]),
    ("kite", "theory-of-mind", [
        ("say", "Here is Sam. Sam leaves his kite under the bed and goes to school."),
        ("say", "His brother finds the kite and puts it in the closet. Sam does not know."),
        ("false_belief", "false_belief_question", "When Sam comes home, where will he look for his kite?", "bed",
         ["closet"], 0.6),
        ("false_belief_2", "false_belief_question", "Does Sam know where his kite is now?", "no", ["yes"], 1.1),
    ]),
    ("spill", "hostile-attribution", [
        ("say", "Imagine that you are eating lunch and you have a full cup of juice."),
        ("say", "A girl walks past your table, her bag hits your cup, and the juice spills on your drawing."),
        ("attribution", "attribution_question", "Do you think the girl spilled your juice on purpose or by accident?",
         "hostile-attribution-scene1-on-purpose", ["hostile-attribution-scene1-by-accident"], None),
        ("action", "action_question", "Now pick one of the three choices as the one you would do:",
         "hostile-attribution-scene1-q2-ans1",
         ["hostile-attribution-scene1-q2-ans2", "hostile-attribution-scene1-q2-ans3"], None),
    ]),
]
OPTION_TEXT = {
    "hostile-attribution-scene1-on-purpose": "on purpose",
    "hostile-attribution-scene1-by-accident": "by accident",
    "hostile-attribution-scene1-q2-ans1": "tell a teacher",
    "hostile-attribution-scene1-q2-ans2": "spill her juice too",
    "hostile-attribution-scene1-q2-ans3": "ask her to help clean up",
}
INTRO = "This is the Stories Game. You will hear some short stories, then answer questions about them."
TRANSITION = "Nice work! Here is a new story."


def _row(block: int, task: str, trial_type: str, audio: str, prompt: str, item: str = "", num: str = "",
         answer: str = "", alts: str = "", chance: str = "") -> list[str]:
    stage = "instructions" if trial_type == "instructions" else "test_response"
    return [SOURCE, str(block), task, trial_type, stage, audio, prompt, item, num, answer, alts, chance, audio]


def build_tom(rng: np.random.Generator) -> TaskItems:
    """The corpus rows (on the returned `corpus`) and the matching manifest items; `rng` orders 3-way options."""
    out = TaskItems("theory-of-mind", [])
    corpus: list[list[str]] = []
    number = 0
    for block, (name, task, steps) in enumerate(STORIES, start=1):
        scene = f"ToM-scene{block}" if task == "theory-of-mind" else "hostile-attribution-scene1"
        corpus.append(_row(block, "theory-of-mind", "instructions", "ToM-intro" if block == 1 else "ToM-transition",
                           INTRO if block == 1 else TRANSITION))
        story: list[str] = []
        said = questions = 0
        for step in steps:
            number += 1
            if step[0] == "say":
                said += 1
                story.append(step[1])
                corpus.append(_row(block, task, "instructions", f"{scene}-instruct{said}", step[1],
                                   f"{block}{'abcdefg'[said - 1]}", str(number)))
                continue
            suffix, trial_type, question, answer, alts, difficulty = step
            alts = [alts[i] for i in rng.permutation(len(alts))]
            questions += 1
            chance = {2: 0.5, 3: 0.33}[len(alts) + 1]
            code = f"{block}{'abcdefg'[said - 1]}"
            kind = trial_type.removesuffix("_question")
            corpus.append(_row(block, task, trial_type, f"{scene}-q{questions}-{kind}", question, code, str(number),
                               answer, ",".join(alts), str(chance)))
            full = " ".join([*story, question.rstrip(":") + ("." if question.endswith(":") else ""),
                             answer_with(len(alts) + 1, "image", lead="Answer")])
            uid = f"tom_{name}_{suffix}" if task == "theory-of-mind" else f"ha_{name}_{suffix}"
            out.items.append(Item(
                task="theory-of-mind", item_uid=uid, trial_type=trial_type, prompt=question, item=code,
                answer=answer, alternatives=tuple(alts), chance=chance, prompt_phrase=None, prompt_image=None,
                full_prompt=full, difficulty=difficulty,
            ))
            for word in (answer, *alts):
                out.images.setdefault(word, draw.text_image(OPTION_TEXT.get(word, word.replace("_", " "))))
    out.corpus = corpus
    return out


SYNTH = SynthTask(build_tom)
