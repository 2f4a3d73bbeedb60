"""Every shell command in README.md and docs/*.md works as written from a fresh clone.

The commands are read from the fenced code blocks (```bash, ```sh, ```shell, ```console, and unlabelled blocks
whose lines start with a known program) and from inline code that starts with `.venv/bin/`, with `\\`
continuations joined, comments, `$ ` prompts and `<placeholder>` brackets removed, `VAR=value` prefixes and
`.venv/bin/` taken off, `$(...)` checked as a command of its own and `&&` / `;` / `|` chains split. Each
command is then checked against the tool that would run it, without weights or network:

- `levante-tasks ...` (and `python -m levante_tasks`): parsed by the CLI's parser (`levante_tasks.cli.build_parser`);
- `lmms-eval ...`, `python -m lmms_eval`, `python -m levante_tasks.testing.lmms_cli`: every flag parsed by lmms-eval's
  parser (`lmms_eval.__main__.parse_eval_args`), every `--tasks` name one of our tasks or groups (the YAMLs under
  TASKS_DIR) or lmms-eval's, every `--model` a registered model (the test doubles too, for lmms_cli), every
  `--model_args` key a parameter of that model's class (`--force_simple` picks the simple one) or of a base class;
- `inspect eval ...`: parsed by inspect's click command (`make_context`, which runs nothing), every task one of our
  registered @tasks, every `-T` name a parameter of it, the model's API a registered inspect model API;
- `make X`: X is a target of the Makefile; `python path.py`, `bash path.sh`, `Rscript path.R`, `python -m pytest
  path`: the file exists; `python -m module`: the module is importable; `python -c CODE`: CODE compiles;
- SKIPPED programs (pip, git, cd, ...) are listed with the reason they are not checked; any other program fails.

Usage synopses (`[--flag VALUE]`, `RUN_DIR [RUN_DIR ...]`, `--seed N`) are read as their fullest concrete form.
RUN lists the commands that are cheap and offline; `test_cheap_commands_run_as_written` runs them for real, in
that order, in a scratch folder (synthetic release, prepare, patch check and audit, matrix dry run, the tiny CLIP
through the real `inspect eval` console script).

The README also stays a manual (under 1,800 words, the newcomer's path first) and every relative link in the docs
resolves.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_LANGUAGES = {"bash", "sh", "shell", "console", "zsh"}
VENV_BIN = Path(sys.executable).parent  # the venv this suite runs in: `.venv/bin/` in a clone (`make test`)

SKIPPED = {
    "pip": "installs packages (the Makefile's install is what `make test` runs)",
    "git": "needs the network or a repository state",
    "cd": "shell builtin", "export": "shell builtin", "source": "shell builtin", "echo": "prints only",
    "ls": "reads only", "cat": "reads only", "tail": "reads only",
    "cp": "copies (its source file is checked: `cp SRC DST` makes DST a file the later commands may name)",
    "squeue": "Slurm client (tests/test_matrix_slurm.py runs the Slurm path)",
    "sbatch": "Slurm client", "scancel": "Slurm client",
}
CHECKED = {"levante-tasks", "lmms-eval", "inspect", "make", "python", "python3", "bash", "Rscript"}
PLACEHOLDER = "PLACEHOLDER"
UNREADABLE = "<unreadable shell line>"
METAVARS = {"N": "0", "K": "0"}  # integer metavariables of usage synopses

# The cheap offline commands run for real, in this order (as written, less `.venv/bin/` and comments).
RUN = [
    "levante-tasks synth --out synth-out --seed 0",
    "levante-tasks prepare --release synth-out --version synthetic",
    "levante-tasks card --version synthetic --check",
    "levante-tasks lmms-eval check",
    "levante-tasks lmms-eval audit",
    "levante-tasks lmms-eval tasks-path",
    "levante-tasks matrix --config examples/matrix.yaml --out runs/m1 --dry-run",
    'python -c "from levante_tasks.testing.tiny_models import build_tiny_clip; build_tiny_clip(\'tiny-clip\')"',
    "inspect eval levante_tasks/levante_trog --model levante-tiny/clip -M pretrained=tiny-clip --limit 2 "
    "--log-dir inspect-logs",
]


@dataclass(frozen=True)
class Command:
    where: str                     # README.md:44
    argv: tuple[str, ...]          # program first, `.venv/bin/` removed
    env: tuple[tuple[str, str], ...]
    labelled: bool                 # from a shell-labelled block (an unknown program is then an error)

    @property
    def text(self) -> str:
        return shlex.join(self.argv)

    def __str__(self) -> str:
        return f"{self.where}: {self.text}"


def _blocks(path: Path):
    """(language, [(line number, line)]) of each fenced code block."""
    lang, lines = None, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = re.match(r"^\s*```(\S*)", line)
        if fence and lang is None:
            lang, lines = fence.group(1).lower(), []
        elif fence:
            yield lang, lines
            lang = None
        elif lang is not None:
            lines.append((number, line))


def _logical_lines(lang: str, lines: list[tuple[int, str]]):
    """(line number, text) with continuations joined; console blocks: the `$ ` lines only."""
    pending, start = "", 0
    for number, line in lines:
        if not pending:
            if lang == "console":
                if not line.lstrip().startswith("$ "):
                    continue
                line = line.lstrip()[2:]
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield start, pending + line
        pending = ""


def _words(text: str) -> list[list[str]]:
    """The simple commands of one shell line: `$(...)` bodies first, then the chain split at `&&`, `||`, `;`, `|`."""
    inner = re.findall(r"\$\(([^()]*)\)", text)
    text = re.sub(r"\$\(([^()]*)\)", PLACEHOLDER, text)
    text = re.sub(r"<([A-Za-z0-9][^<>\s]*)>", r"\1", text)  # <hf-id-or-folder> -> hf-id-or-folder
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    commands, current, tokens = [], [], list(lexer)
    skip = False
    for token in tokens:
        if skip:
            skip = False
        elif token in {"&&", "||", ";", "|", "&"}:
            commands.append(current)
            current = []
        elif token and set(token) <= set("<>"):  # a redirection: drop it and its target
            skip = True
        else:
            current.append(token)
    commands.append(current)
    return [words for part in inner for words in _words(part)] + [c for c in commands if c]


def extract(path: Path, root: Path = ROOT) -> list[Command]:
    found = []
    rel = path.relative_to(root).as_posix()
    for lang, lines in _blocks(path):
        if lang not in SHELL_LANGUAGES and lang != "":
            continue
        for number, line in _logical_lines(lang, lines):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            heads = [w for w in line.split() if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)][:1]
            if lang == "" and not any(h.removeprefix(".venv/bin/") in CHECKED | set(SKIPPED) for h in heads):
                break  # an unlabelled block that is not shell (a file layout, a prompt, a trace)
            try:
                simple = _words(line)
            except ValueError as exc:  # unbalanced quotes: the shell would not run it either
                found.append(Command(f"{rel}:{number}", (UNREADABLE, str(exc), line), (), True))
                continue
            for words in simple:
                env = []
                while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
                    env.append(tuple(words.pop(0).split("=", 1)))
                if not words:
                    continue
                program = words[0].removeprefix(".venv/bin/")
                found.append(Command(f"{rel}:{number}", (program, *words[1:]), tuple(env), lang != ""))
    return found


def extract_inline(path: Path, root: Path = ROOT) -> list[Command]:
    """Inline code spans outside fenced blocks that start with `.venv/bin/` (commands users copy from prose)."""
    rel = path.relative_to(root).as_posix()
    text = re.sub(r"^\s*```.*?^\s*```", lambda m: "\n" * m.group(0).count("\n"),
                  path.read_text(encoding="utf-8"), flags=re.M | re.S)
    found = []
    for match in re.finditer(r"`(\.venv/bin/[^`]+)`", text):
        number = text.count("\n", 0, match.start()) + 1
        for words in _words(match.group(1).replace("\n", " ")):
            found.append(Command(f"{rel}:{number}", (words[0].removeprefix(".venv/bin/"), *words[1:]), (), True))
    return found


COMMANDS = [command for path in DOCS for command in [*extract(path), *extract_inline(path)]]


def _concrete(argv: tuple[str, ...]) -> list[str]:
    """A usage synopsis as its fullest concrete command: `[--x V]` -> `--x V`, `A [A ...]` -> `A`, `--m ...` ->
    `--m PLACEHOLDER`, `--seed N` -> `--seed 0`."""
    out: list[str] = []
    for token in argv:
        bare = token.lstrip("[").rstrip("]") if token.startswith("[") or token.endswith("]") else token
        if bare in ("...", "…"):
            if out and out[-1].startswith("-"):
                out.append(PLACEHOLDER)
            continue
        out.append(METAVARS.get(bare, bare))
    return out


def _parse_exit(parse) -> str | None:
    """None if `parse()` parses; else argparse's message (it exits 2 on a bad command line)."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parse()
    except SystemExit as exc:
        if exc.code not in (0, None):
            return err.getvalue().strip() or f"exit {exc.code}"
    return None


def copied_files() -> frozenset[str]:
    """Every DST of a documented `cp SRC DST`: a file the docs tell users to make before naming it."""
    return frozenset(c.argv[-1] for c in COMMANDS if c.argv[0] == "cp" and len(c.argv) >= 3)


def check_levante_tasks(args: list[str]) -> list[str]:
    """Parsed by the CLI's own parser; a `--config FILE` must exist in a fresh clone (or be made by a documented
    `cp`), since a config the reader has no copy of does not run as written."""
    from levante_tasks.cli import build_parser

    message = _parse_exit(lambda: build_parser().parse_args(args))
    if message:
        return [f"levante-tasks does not parse it: {message}"]
    configs = [value for flag, value in zip(args, args[1:], strict=False) if flag == "--config"]
    return _missing([c for c in configs if c != PLACEHOLDER and c not in copied_files()])


@cache
def our_lmms_names() -> frozenset[str]:
    from levante_tasks.schema.task_source import TASKS_DIR

    pattern = re.compile(r"^(?:task|group|tag):\s*([A-Za-z0-9_.\-]+)\s*$", re.M)
    return frozenset(name for path in TASKS_DIR.rglob("*.yaml") for name in pattern.findall(path.read_text()))


@cache
def upstream_lmms_names() -> frozenset[str]:
    from lmms_eval.tasks import TaskManager

    return frozenset(TaskManager().all_tasks)


def check_lmms_eval(args: list[str], test_models: bool = False) -> list[str]:
    from lmms_eval.__main__ import parse_eval_args
    from lmms_eval.models import MODEL_REGISTRY_V2

    if args[:1] == ["eval"]:
        args = args[1:]
    parsed = []
    saved = sys.argv
    sys.argv = ["lmms-eval", *args]
    try:
        message = _parse_exit(lambda: parsed.append(parse_eval_args()[1]))
    finally:
        sys.argv = saved
    if message:
        return [f"lmms-eval does not parse it: {message}"]
    (namespace,) = parsed
    problems = []
    listing = {"list", "list_groups", "list_tags", "list_subtasks"}
    for name in (namespace.tasks or "").split(","):
        if name and name != PLACEHOLDER and name not in listing | our_lmms_names():
            if name not in upstream_lmms_names():
                problems.append(f"--tasks {name}: not a LEVANTE or lmms-eval task or group")
    models = set(MODEL_REGISTRY_V2.list_model_names())
    if test_models:
        from levante_tasks.testing.models import MANIFESTS

        models |= {m.model_id for m in MANIFESTS}
    if "--model" in args and namespace.model not in models | {PLACEHOLDER}:
        problems.append(f"--model {namespace.model}: not a registered lmms-eval model")
    elif namespace.model in models and namespace.model_args:
        problems += model_args_problems(namespace.model, namespace.model_args, namespace.force_simple)
    return problems


def model_class(model: str, force_simple: bool = False) -> type:
    """The class `lmms-eval --model MODEL` runs: a registered model's, else one of our test doubles' (lmms_cli)."""
    from lmms_eval.models import MODEL_REGISTRY_V2

    from levante_tasks.testing.models import MANIFESTS

    if model in MODEL_REGISTRY_V2.list_model_names():
        return MODEL_REGISTRY_V2.get_model_class(model, force_simple)
    (manifest,) = [m for m in MANIFESTS if m.model_id == model]
    module, _, name = (manifest.chat_class_path or manifest.simple_class_path).rpartition(".")
    return getattr(importlib.import_module(module), name)


def init_parameters(cls: type) -> dict[str, object]:
    """Named `__init__` parameters of `cls` and its bases (a class passing `**kwargs` up takes its bases'), with
    their defaults (`inspect.Parameter.empty` where none)."""
    import inspect as pyinspect

    found: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        if "__init__" in vars(klass) and klass is not object:
            for name, param in pyinspect.signature(klass.__init__).parameters.items():
                if name != "self" and param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                    found[name] = param.default
    return found


def model_args_problems(model: str, model_args: str, force_simple: bool) -> list[str]:
    """Each `key=value` of `--model_args` names a parameter the model's class takes."""
    from lmms_eval.utils import simple_parse_args_string

    known = init_parameters(model_class(model, force_simple))
    return [f"--model_args {key}: {model} takes no such argument" for key in simple_parse_args_string(model_args)
            if key not in known]


def check_inspect(args: list[str]) -> list[str]:
    import inspect as pyinspect

    import inspect_ai.model._providers.providers  # noqa: F401 (inspect's own model APIs)
    from inspect_ai._cli.eval import eval_command
    from inspect_ai._util.registry import registry_find, registry_unqualified_name

    import levante_tasks._registry as registry

    if args[:1] != ["eval"]:
        return [f"inspect {args[:1]}: only `inspect eval` is checked; add a check for it"]
    try:
        params = eval_command.make_context("eval", list(args[1:])).params
    except Exception as exc:  # click's UsageError / BadParameter
        return [f"inspect eval does not parse it: {exc}"]
    problems = []
    for name in params["tasks"]:
        function = registry.TASK_FUNCTIONS.get(name.removeprefix("levante_tasks/"))
        if not name.startswith("levante_tasks/") or function is None:
            problems.append(f"task {name}: not one of ours (levante_tasks/<lmms-eval name>)")
            continue
        known = {p.name for p in pyinspect.signature(function).parameters.values() if p.kind != p.VAR_KEYWORD}
        problems += [f"-T {kv}: {name} has no parameter {kv.split('=')[0]!r}" for kv in params["t"]
                     if kv.split("=")[0] not in known]
    api = (params["model"] or "").split("/")[0]
    found = registry_find(lambda info: info.type == "modelapi" and registry_unqualified_name(info) == api)
    if not found:
        problems.append(f"--model {params['model']}: inspect has no model API {api!r}")
    return problems


@cache
def make_targets() -> frozenset[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return frozenset(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", text, re.M))


def _missing(paths: list[str]) -> list[str]:
    return [f"{p}: no such file in the repository" for p in paths if not (ROOT / p.split("::")[0]).exists()]


def check_python(args: list[str]) -> list[str]:
    if args[:1] == ["-c"]:
        try:
            compile(args[1], "<-c>", "exec")
        except SyntaxError as exc:
            return [f"python -c: {exc}"]
        return []
    if args[:1] != ["-m"]:
        return _missing(args[:1])
    module, rest = args[1], args[2:]
    if module == "levante_tasks":
        return check_levante_tasks(rest)
    if module == "lmms_eval":
        return check_lmms_eval(rest)
    if module == "levante_tasks.testing.lmms_cli":
        return check_lmms_eval(rest, test_models=True)
    if module == "pytest":
        return _missing([a for a in rest if not a.startswith("-") and ("/" in a or a.endswith(".py"))])
    return [] if importlib.util.find_spec(module) else [f"python -m {module}: no such module"]


def check(command: Command) -> list[str]:
    program, *args = _concrete(command.argv)
    if program == "levante-tasks":
        return check_levante_tasks(args)
    if program == "lmms-eval":
        return check_lmms_eval(args)
    if program == "inspect":
        return check_inspect(args)
    if program == "make":
        return [f"make {t}: no such target in the Makefile" for t in args if not t.startswith("-")
                and "=" not in t and t not in make_targets()]
    if program in ("python", "python3"):
        return check_python(args)
    if program in ("bash", "Rscript"):
        return _missing(args[:1])
    if program == "cp":
        return _missing([a for a in args[:-1] if not a.startswith("-")])
    if program in SKIPPED:
        return []
    if program == UNREADABLE:
        return [f"{args[0]}: {args[1]}"]
    return [f"{program}: not a program this test knows; check it or add it to SKIPPED with a reason"]


def test_the_docs_hold_the_commands_users_copy():
    argvs = {c.argv for c in COMMANDS}
    assert ("make", "test") in argvs and ("make", "demo") in argvs  # the README's install and CI's test command
    assert [r for r in RUN if tuple(shlex.split(r)) not in argvs] == [], "a RUN command is no longer in the docs"
    assert {c.argv[0] for c in COMMANDS} >= {"levante-tasks", "lmms-eval", "inspect", "make", "python"}


@pytest.mark.parametrize("command", COMMANDS, ids=[c.where for c in COMMANDS])
def test_every_documented_command_is_accepted_by_its_tool(command):
    assert check(command) == [], str(command)


def test_a_bad_command_fails_each_check():
    """The checks are not vacuous: a misspelt flag, task, model, target or file is reported."""
    bad = ["levante-tasks synth --out x --sed 0", "levante-tasks prepar", "lmms-eval --tasks levante_trgo",
           "lmms-eval --model levante_clp --tasks levante_trog", "lmms-eval --taks levante_trog",
           "inspect eval levante_tasks/levante_trgo --model levante-tiny/clip",
           "inspect eval levante_tasks/levante_trog --model nosuchapi/x",
           "inspect eval levante_tasks/levante_trog --model levante-tiny/clip -T sed=1",
           "inspect eval levante_tasks/levante_trog --modell x", "make tests", "python scripts/nope.py",
           "python -m levante_tasks summarise", "frobnicate --all",
           "levante-tasks matrix --config matrix.yaml --out runs/m1", "cp nosuch.yaml my.yaml",
           "lmms-eval --model llava_hf --model_args pretrained=x,device_mapp=cpu --tasks levante_trog",
           "lmms-eval --model qwen2_5_vl --model_args pretrained=x,chat_template=y --tasks levante_trog --force_simple",
           "python -m levante_tasks.testing.lmms_cli --model levante_fixed --model_args leter=B --tasks levante_trog"]
    for text in bad:
        assert check(Command("t:1", tuple(shlex.split(text)), (), True)), text


def test_extraction_reads_continuations_env_prefixes_substitutions_and_synopses(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("```bash\nCI=true make test   # comment\n.venv/bin/lmms-eval --model a \\\n    --tasks b\n"
                   "echo \"$(.venv/bin/levante-tasks lmms-eval tasks-path)\" && ls > out.txt\n```\n"
                   "```\n<data_dir>/<version>/\n```\n```console\n$ levante-tasks synth --out DIR --seed N\nok\n```\n")
    found = extract(doc, root=tmp_path)
    assert [(c.where, c.argv, c.env) for c in found] == [
        ("doc.md:2", ("make", "test"), (("CI", "true"),)),
        ("doc.md:3", ("lmms-eval", "--model", "a", "--tasks", "b"), ()),
        ("doc.md:5", ("levante-tasks", "lmms-eval", "tasks-path"), ()),
        ("doc.md:5", ("echo", PLACEHOLDER), ()),
        ("doc.md:5", ("ls",), ()),
        ("doc.md:11", ("levante-tasks", "synth", "--out", "DIR", "--seed", "N"), ()),
    ]
    assert _concrete(("levante-tasks", "summarize", "R", "[R", "...]", "--out", "D", "[--no-plot]")) == [
        "levante-tasks", "summarize", "R", "R", "--out", "D", "--no-plot"]


def test_cheap_commands_run_as_written(tmp_path):
    """The RUN commands, as the docs write them, in a scratch folder: each exits 0 and leaves what it promises."""
    by_argv = {c.argv: c for c in COMMANDS}
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "matrix.yaml", tmp_path / "examples" / "matrix.yaml")
    env = {**os.environ, "LEVANTE_DATA_DIR": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "COLUMNS": "200"}
    env.pop("LEVANTE_DATA_VERSION", None)
    outputs = {}
    for text in RUN:
        command = by_argv[tuple(shlex.split(text))]
        program, *args = command.argv
        argv = [sys.executable, *args] if program == "python" else [str(VENV_BIN / program), *args]
        proc = subprocess.run(argv, cwd=tmp_path, env={**env, **dict(command.env)}, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        outputs[text] = proc.stdout
    assert (tmp_path / "synth-out" / "synthetic" / "manifest.csv").is_file()
    assert (tmp_path / "data" / "synthetic" / "datasets").is_dir()
    assert "every key unique" in outputs[RUN[2]]  # the data card prepare wrote, checked down to its records
    assert Path(outputs[RUN[5]].strip()).is_dir()  # tasks-path
    assert "python -m lmms_eval" in outputs[RUN[6]] and not (tmp_path / "runs").exists()  # --dry-run writes nothing
    from inspect_ai.log import read_eval_log

    (log_path,) = (tmp_path / "inspect-logs").glob("*.eval")
    log = read_eval_log(str(log_path))
    assert log.status == "success" and log.eval.task == "levante_tasks/levante_trog" and len(log.samples) == 2
    assert log.eval.model == "levante-tiny/clip"


def test_readme_is_a_short_manual_that_opens_with_the_newcomers_path():
    """The README stays a manual: under 1,800 words as `wc -w README.md` counts them (every whitespace-separated
    word, code blocks and output included), and its first section, after a short "what it is", takes a fresh clone
    from `make demo` to a real model's comparison with children."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.split()) < 1800
    headings = [n for n, line in enumerate(text.splitlines(), 1) if line.startswith("## ")]
    assert len(" ".join(text.splitlines()[:headings[0] - 1]).split()) < 80
    first = range(headings[0], headings[1])
    steps = [c.argv[:2] for c in extract(ROOT / "README.md") if int(c.where.split(":")[1]) in first]
    assert [s for s in [("make", "demo"), ("levante-tasks", "prepare"), ("lmms-eval", "--model"),
                        ("levante-tasks", "summarize"), ("levante-tasks", "compare")] if s not in steps] == []


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a markdown file (lower case, punctuation dropped, spaces as hyphens)."""
    headings = re.findall(r"^#+ (.*)$", path.read_text(encoding="utf-8"), re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_relative_links_in_the_docs_resolve():
    """The README is short because it links to docs/: every relative link (and its #anchor) must lead somewhere."""
    broken = []
    for path in DOCS:
        text = re.sub(r"^\s*```.*?^\s*```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
        for link in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", link):
                continue
            file, _, anchor = link.partition("#")
            target = (path.parent / file) if file else path
            if not target.exists() or (anchor and target.suffix == ".md" and anchor not in _anchors(target)):
                broken.append(f"{path.relative_to(ROOT)}: {link}")
    assert broken == []


# ---------------------------------------------------------------- docs/compatibility.md: one command line per class

COMPAT_DOC = ROOT / "docs" / "compatibility.md"
DECORD_PROBE = """
import importlib, json, sys
sys.modules["decord"] = None  # what `import decord` meets where it is not installed
needs = {}
for module in sys.argv[1:]:
    try:
        importlib.import_module(module)
        needs[module] = False
    except ImportError as exc:
        needs[module] = "decord" in str(exc)
print(json.dumps(needs))
"""


def generating_classes() -> set[str]:
    """The model classes docs/compatibility.md's generated table shows generating the tasks (some row works)."""
    from levante_tasks.testing.compat_table import BEGIN, END

    text = COMPAT_DOC.read_text(encoding="utf-8")
    table = text[text.index(BEGIN):text.index(END)]
    lines = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()
             if line.startswith("| ")]
    column = lines[0].index("generate (every task)")  # the header names the column (batch sizes came before it)
    return {row[0].strip("`") for row in lines[1:] if row[column].startswith("works")}


def class_command_lines() -> dict[str, list[Command]]:
    """docs/compatibility.md's `lmms-eval` command lines, by `--model`."""
    found: dict[str, list[Command]] = {}
    for command in extract(COMPAT_DOC):
        if command.argv[0] == "lmms-eval" and "--model" in command.argv:
            found.setdefault(command.argv[command.argv.index("--model") + 1], []).append(command)
    return found


def test_compatibility_doc_gives_each_working_class_a_command_line_a_user_can_type():
    """Each class the table shows working has a line (checked by its tool like every documented command, above);
    a CPU line says `--device cpu` and, where the class's default `device_map` is not `""` (which patches 0010 and
    0016 make follow `--device`), `device_map=cpu`; `openai`'s line sets `OPENAI_API_BASE` and `OPENAI_API_KEY`."""
    from lmms_eval.utils import simple_parse_args_string

    working, lines = generating_classes(), class_command_lines()
    assert {"llava_hf", "openai", "qwen2_vl"} <= working and working - set(lines) == set()
    for model in working:
        for command in lines[model]:
            argv = list(command.argv)
            args = simple_parse_args_string(argv[argv.index("--model_args") + 1])
            if model == "openai":
                assert {"OPENAI_API_BASE", "OPENAI_API_KEY"} <= dict(command.env).keys(), str(command)
                continue
            assert argv[argv.index("--device") + 1] == "cpu", str(command)
            default = init_parameters(model_class(model, "--force_simple" in argv))["device_map"]
            assert args.get("device_map", default) in ("", "cpu"), f"{command}: loads on {default!r}, not the CPU"


def test_each_class_that_imports_decord_has_its_extra_named_in_the_docs_and_installed_by_make():
    """A class whose module cannot be imported without decord (lmms-eval's `qwen2_vl`, `qwen2_5_vl`, `llava_hf`) has
    an extra named for its family (a prefix of the class name) that lists decord; the doc's install lines name it,
    and `make` installs it (the compatibility suite runs these classes)."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    documented = {extra for command in extract(COMPAT_DOC) if command.argv[:2] == ("pip", "install")
                  for word in command.argv for group in re.findall(r"^\.\[([a-z,]+)\]$", word)
                  for extra in group.split(",")}
    (made,) = re.findall(r"pip install .*-e \"\.\[([a-z,]+)\]\"", (ROOT / "Makefile").read_text(encoding="utf-8"))
    classes = {model: model_class(model).__module__ for model in generating_classes() if model != "openai"}
    probe = subprocess.run([sys.executable, "-c", DECORD_PROBE, *classes.values()], capture_output=True, text=True,
                           timeout=600, check=True)
    needs = json.loads(probe.stdout.strip().splitlines()[-1])
    decord_classes = sorted(model for model, module in classes.items() if needs[module])
    assert decord_classes == ["llava_hf", "qwen2_5_vl", "qwen2_vl"], needs  # the probe tells them apart
    for model in decord_classes:
        family = [name for name in extras if model.startswith(name)]
        assert family and all(any(r.startswith("decord") for r in extras[name]) for name in family), (model, extras)
        assert set(family) <= documented and set(family) <= set(made.split(",")), (model, documented, made)
