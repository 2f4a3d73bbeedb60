"""The theory-of-mind task's synthetic builder: stories in the corpus item bank and the manifest rows made from them.

The corpus item bank's instruction rows carry the story, its test_response rows the questions; the manifest rows
are derived from it, 1:1 and in order, as in the real release.

A manifest full_prompt is the block's instruction sentences up to the question (the intro and transition lines
left out) + the question + the answer suffix. Options are word-keyed pictures that show the word.

Translations (`TEXTS`, made up): every corpus sentence and question and every option word, in German and Spanish,
with the characters' names localised as LEVANTE's stories do (Leo is Leon in German and Mateo in Spanish).
"""

from __future__ import annotations

import numpy as np

from levante_tasks.synth import draw
from levante_tasks.synth.items import Item, TaskItems, answer_with
from levante_tasks.synth.items_language import TRANSLATED_LOCALES
from levante_tasks.synth.task import SynthTask
from levante_tasks.synth.translations import TranslationRow

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


TEXTS: dict[str, tuple[str, str]] = {  # English -> (German, Spanish)
    INTRO: ("Das ist das Geschichtenspiel. Du hörst ein paar kurze Geschichten und beantwortest dann Fragen dazu.",
            "Este es el juego de las historias. Vas a escuchar historias cortas y luego responderás preguntas."),
    TRANSITION: ("Gut gemacht! Hier ist eine neue Geschichte.", "¡Muy bien! Aquí hay una historia nueva."),
    "Here is Leo. Leo put his ball in the basket and went outside to play.": (
        "Das ist Leon. Leon hat seinen Ball in den Korb gelegt und ist zum Spielen nach draußen gegangen.",
        "Este es Mateo. Mateo puso su pelota en la canasta y salió a jugar."),
    "While Leo was outside, his sister took the ball out of the basket and put it in the box.": (
        "Während Leon draußen war, hat seine Schwester den Ball aus dem Korb genommen und in die Schachtel gelegt.",
        "Mientras Mateo estaba afuera, su hermana sacó la pelota de la canasta y la puso en la caja."),
    "Where will Leo look for his ball first?": ("Wo wird Leon zuerst nach seinem Ball suchen?",
                                                "¿Dónde buscará Mateo su pelota primero?"),
    "Where is the ball really?": ("Wo ist der Ball wirklich?", "¿Dónde está la pelota realmente?"),
    "Here is a crayon box. Nora opens it and finds buttons inside, not crayons! She closes the box.": (
        "Hier ist eine Schachtel für Buntstifte. Nora öffnet sie und findet Knöpfe darin, keine Buntstifte! Sie macht "
        "die Schachtel wieder zu.",
        "Aquí hay una caja de crayones. Nora la abre y encuentra botones adentro, ¡no crayones! Ella cierra la caja."),
    "Then Omar comes in. Omar did not see inside the box.": (
        "Dann kommt Emil herein. Emil hat nicht in die Schachtel geschaut.",
        "Luego entra Tomás. Tomás no vio lo que hay dentro de la caja."),
    "What will Omar think is in the box?": ("Was glaubt Emil, was in der Schachtel ist?",
                                            "¿Qué pensará Tomás que hay en la caja?"),
    "What is really in the box?": ("Was ist wirklich in der Schachtel?", "¿Qué hay realmente en la caja?"),
    "Did Omar see inside the box?": ("Hat Emil in die Schachtel geschaut?", "¿Tomás vio dentro de la caja?"),
    "Here is Mia. Mia's dad puts the cookies in the jar, and Mia watches him.": (
        "Das ist Mia. Mias Papa legt die Kekse in das Glas, und Mia sieht ihm zu.",
        "Esta es Sofía. El papá de Sofía pone las galletas en el frasco, y Sofía lo mira."),
    "Mia goes to her room. While she is gone, dad moves the cookies to the drawer.": (
        "Mia geht in ihr Zimmer. Während sie weg ist, legt Papa die Kekse in die Schublade.",
        "Sofía se va a su cuarto. Mientras no está, el papá pasa las galletas al cajón."),
    "Did Mia see dad move the cookies?": ("Hat Mia gesehen, wie Papa die Kekse weggeräumt hat?",
                                          "¿Sofía vio al papá cambiar las galletas de lugar?"),
    "Now Mia comes back, and she wants a cookie.": ("Jetzt kommt Mia zurück und möchte einen Keks.",
                                                    "Ahora Sofía regresa y quiere una galleta."),
    "Where will Mia look for the cookies?": ("Wo wird Mia nach den Keksen suchen?",
                                             "¿Dónde buscará Sofía las galletas?"),
    "Where are the cookies really?": ("Wo sind die Kekse wirklich?", "¿Dónde están realmente las galletas?"),
    "Here is Sam. Sam leaves his kite under the bed and goes to school.": (
        "Das ist Finn. Finn lässt seinen Drachen unter dem Bett liegen und geht zur Schule.",
        "Este es Samuel. Samuel deja su cometa debajo de la cama y se va al colegio."),
    "His brother finds the kite and puts it in the closet. Sam does not know.": (
        "Sein Bruder findet den Drachen und legt ihn in den Schrank. Finn weiß das nicht.",
        "Su hermano encuentra la cometa y la guarda en el armario. Samuel no lo sabe."),
    "When Sam comes home, where will he look for his kite?": (
        "Wenn Finn nach Hause kommt, wo wird er nach seinem Drachen suchen?",
        "Cuando Samuel llegue a casa, ¿dónde buscará su cometa?"),
    "Does Sam know where his kite is now?": ("Weiß Finn, wo sein Drachen jetzt ist?",
                                             "¿Samuel sabe dónde está su cometa ahora?"),
    "Imagine that you are eating lunch and you have a full cup of juice.": (
        "Stell dir vor, du isst zu Mittag und hast einen vollen Becher Saft.",
        "Imagina que estás almorzando y tienes un vaso lleno de jugo."),
    "A girl walks past your table, her bag hits your cup, and the juice spills on your drawing.": (
        "Ein Mädchen geht an deinem Tisch vorbei, ihre Tasche stößt an deinen Becher, und der Saft läuft über dein "
        "Bild.",
        "Una niña pasa junto a tu mesa, su maleta golpea tu vaso y el jugo se riega sobre tu dibujo."),
    "Do you think the girl spilled your juice on purpose or by accident?": (
        "Glaubst du, das Mädchen hat deinen Saft mit Absicht oder aus Versehen verschüttet?",
        "¿Crees que la niña regó tu jugo a propósito o sin querer?"),
    "Now pick one of the three choices as the one you would do:": (
        "Wähle jetzt aus den drei Möglichkeiten aus, was du tun würdest:",
        "Ahora escoge cuál de las tres opciones harías tú:"),
    # option words (the pictures show the English word; their rows are keyed by the option itself)
    "basket": ("Korb", "canasta"), "box": ("Schachtel", "caja"), "crayons": ("Buntstifte", "crayones"),
    "buttons": ("Knöpfe", "botones"), "no": ("nein", "no"), "yes": ("ja", "sí"), "jar": ("Glas", "frasco"),
    "drawer": ("Schublade", "cajón"), "bed": ("Bett", "cama"), "closet": ("Schrank", "armario"),
    "on purpose": ("mit Absicht", "a propósito"), "by accident": ("aus Versehen", "sin querer"),
    "tell a teacher": ("es einer Lehrerin sagen", "decirle a la profesora"),
    "spill her juice too": ("ihren Saft auch verschütten", "regar su jugo también"),
    "ask her to help clean up": ("sie bitten, beim Aufräumen zu helfen", "pedirle que ayude a limpiar"),
}
LABEL = "theory-of-mind, Stories"  # the real table labels hostile-attribution rows so too


def _translation(item_id: str, en: str, items: tuple[str, ...] = ()) -> TranslationRow:
    german, spanish = TEXTS[en]
    return TranslationRow(item_id, LABEL, en, dict(zip(TRANSLATED_LOCALES, (spanish, german), strict=True)), items)


def translate_tom(task: TaskItems) -> list[TranslationRow]:
    """One row per corpus item_id (story sentences, questions; the intro and transition once) and one per option
    key, as LEVANTE's table keys its story rows and answer options."""
    uid_of = {(item.prompt, item.item): item.item_uid for item in task.items}
    rows: dict[str, TranslationRow] = {}
    for line in task.corpus:
        record = dict(zip(CORPUS_COLUMNS, line, strict=True))
        uid = uid_of.get((record["prompt"], record["item"])) if record["assessment_stage"] == "test_response" else None
        rows.setdefault(record["item_id"], _translation(record["item_id"], record["prompt"], (uid,) if uid else ()))
    for item in task.items:
        for key in (item.answer, *item.alternatives):
            rows.setdefault(key, _translation(key, OPTION_TEXT.get(key, key.replace("_", " "))))
    return list(rows.values())


SYNTH = SynthTask(build_tom, by_language=True, translate=translate_tom)
