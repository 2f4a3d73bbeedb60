"""Each lmms-eval patch fixes its bug and changes nothing else, shown on trees built from the installed package.

For every patch a tree with all patches *but* that one shows the bug; the fully patched tree shows the fix. The
same probes run on both, so untouched behaviour (inputs outside the bug) must give identical outputs. Each probe
and run of the CLI runs lmms_eval from its tree in a process of its own (PYTHONPATH first), so the venv's own copy is
never imported here: a fork of one server for all the trees (`lmms_fork`'s tree server, which imported only
third-party libraries), so each imports its tree's lmms_eval afresh. What the fully patched tree's start-up and a
LEVANTE run load (P15, P18, P19) is shown in a new interpreter (`fresh_all`).
The patch set is the one for the installed version: 0.7.2 in .venv; `make test` runs this file again in a
throwaway venv holding 0.7.3 (scripts/test_lmms_eval_version.sh).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from levante_tasks.lmms.patcher.engine import revert_patch_set
from levante_tasks.lmms.patcher.target import installed_root, resolve_target
from levante_tasks.lmms.patcher.unidiff import FilePatch
from levante_tasks.schema.task_source import TASKS_DIR
from levante_tasks.testing.lmms_fork import CODE, run_cli, stop_tree_servers

REPO_ROOT = Path(__file__).resolve().parents[1]
PATCH_SET = resolve_target(installed_root())[1]  # the set for the installed version
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Series entries by number (the same number fixes the same bug in every version's set).
BY_NUMBER = {name[:4]: name for name in PATCH_SET.series}
P_MC, P_PLUGIN, P_ENTRY, P_HF, P_FILELOCK, P_EXIT, P_MC_CACHED = (
    BY_NUMBER[n] for n in ("0001", "0002", "0003", "0005", "0006", "0007", "0008")
)
P_SKIP = BY_NUMBER.get("0004")  # 0.7.2 only: the 0.7.3 wheel ships the include templates
P_GROUP_SKIP = BY_NUMBER["0014"]
P_REFUSE_MC, P_LLAVA_DEVICE, P_REFUSAL_WORDS, P_LAZY_EVALUATE, P_LIBYAML, P_LAZY_CHAIR, P_LAZY_PUNCTUATION = (
    BY_NUMBER[n] for n in ("0013", "0016", "0017", "0018", "0020", "0021", "0022")
)
# 0015 is one bug in three model classes: one patch file per class file (the patcher's rule: one file per patch).
P_BATCH_TASK = {"Qwen2_VL": "0015-qwen2-vl-batch-items-own-task.patch",
                "Qwen2_5_VL": "0015-qwen2-5-vl-batch-items-own-task.patch",
                "Huggingface": "0015-hf-chat-batch-items-own-task.patch"}


# ---------------------------------------------------------------- building trees

def _apply_with_offset(text: str, file_patch: FilePatch) -> str:
    """Apply hunks where their old lines occur nearest the stated line (like `patch`'s offset search).

    Leave-one-out trees need it: a later patch's line numbers assume the earlier patches are present.
    """
    lines = text.splitlines(keepends=True)
    growth = 0
    for hunk in file_patch.hunks:
        size = len(hunk.old_lines)
        hits = [i for i in range(len(lines) - size + 1) if lines[i : i + size] == hunk.old_lines]
        assert hits, f"{file_patch.path}: hunk at {hunk.old_start + 1} not found"
        start = min(hits, key=lambda i: abs(i - (hunk.old_start + growth)))
        lines[start : start + size] = hunk.new_lines
        growth += len(hunk.new_lines) - size
    return "".join(lines)


def _pristine_targets(tmp: Path) -> dict[str, str]:
    """Upstream text of every target file: the installed copies, reverted if the venv is patched."""
    src = installed_root()
    for rel in ["lmms_eval/__init__.py", *PATCH_SET.targets]:
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, tmp / rel)
    target, patch_set = resolve_target(tmp)  # a bare copy: recognised by its files
    assert patch_set.version == PATCH_SET.version
    revert_patch_set(target, patch_set)
    return {rel: (tmp / rel).read_text(encoding="utf-8") for rel in PATCH_SET.targets}


def _link(source: str, link: str) -> None:
    """`link` made a hard link to `source` (about a fifth of a symlink's CPU: no inode of its own), or a symlink where
    the file system refuses one (another device, protected hard links). Neither is ever written in place: Python
    replaces a stale byte-code cache with a new file."""
    try:
        os.link(source, link)
    except OSError:
        os.symlink(source, link)


def _build_tree(root: Path, pristine: dict[str, str], patches: list[str]) -> Path:
    """Mirror the installed lmms_eval with links (`_link`; byte-code caches included, so imports stay fast) and real
    target files carrying exactly `patches`, applied in series order."""
    src = str(installed_root())
    skipped = {*PATCH_SET.targets, "lmms_eval/.levante_patches.json"}
    for folder, _dirs, files in os.walk(os.path.join(src, "lmms_eval")):  # plain strings: 3,500 files per tree
        rel_dir = os.path.relpath(folder, src)
        os.makedirs(os.path.join(root, rel_dir), exist_ok=True)
        for name in files:
            rel = f"{rel_dir}/{name}"
            if rel not in skipped:
                _link(os.path.join(folder, name), os.path.join(root, rel))
    for rel, text in pristine.items():
        for name in PATCH_SET.series:
            if name in patches and PATCH_SET.file_patch(name).path == rel:
                text = _apply_with_offset(text, PATCH_SET.file_patch(name))
        (root / rel).write_text(text, encoding="utf-8")
    return root


# A patch written on top of another one's lines cannot apply without it: leaving the base out drops both.
BUILDS_ON = {P_MC_CACHED: P_MC, P_GROUP_SKIP: P_ENTRY, P_REFUSAL_WORDS: P_REFUSE_MC}


class Trees:
    """`all` = every patch; `<patch>` = every patch but that one (and those that build on it); `0015` = every patch
    but the three files of 0015 (one bug in three classes: one probe shows it in each). Each is built when a test
    first asks for it (the tests use 18 of the 26)."""

    def __init__(self, base: Path) -> None:
        self.base, self.pristine, self.built = base, _pristine_targets(base / "pristine"), dict[str, Path]()

    def __getitem__(self, name: str) -> Path:
        if name not in self.built:
            if name == "all":
                kept = PATCH_SET.series
            elif name == "0015":
                kept = [p for p in PATCH_SET.series if p[:4] != "0015"]
            else:
                assert name in PATCH_SET.series, name
                kept = [p for p in PATCH_SET.series if p != name and BUILDS_ON.get(p) != name]
            self.built[name] = _build_tree(self.base / name, self.pristine, kept)
        return self.built[name]


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trees]:
    yield Trees(tmp_path_factory.mktemp("lmms_trees"))
    stop_tree_servers()  # the trees' lmms_fork server (about 0.6 GiB) is not needed after this module


# ---------------------------------------------------------------- tiny task packages

UTILS = '''
def doc_to_visual(doc):
    return []


def doc_to_text(doc):
    return doc["question"]


def doc_to_choice(doc):
    return doc["choices"]


def process_gen(doc, results):
    return {"exact": float(results[0].strip() == doc["letter"])}
'''
DOCS = [
    {"question": "q0", "choices": ["a", "b"], "answer": 0, "letter": "A"},
    {"question": "q1", "choices": ["a", "b"], "answer": 1, "letter": "B"},
    {"question": "q2", "choices": ["a", "b", "c"], "answer": 0, "letter": "A"},
]
MC_YAML = """task: {name}
dataset_path: json
dataset_kwargs: {{data_files: {{test: {docs}}}}}
test_split: test
output_type: multiple_choice
doc_to_visual: !function utils.doc_to_visual
doc_to_text: !function utils.doc_to_text
doc_to_choice: !function utils.doc_to_choice
doc_to_target: answer
metric_list: [{{metric: acc, aggregation: mean, higher_is_better: true}}]
metadata: {{version: 1.0}}
"""
GEN_YAML = """task: {name}
dataset_path: json
dataset_kwargs: {{data_files: {{test: {docs}}}}}
test_split: test
output_type: generate_until
doc_to_visual: !function utils.doc_to_visual
doc_to_text: !function utils.doc_to_text
doc_to_target: letter
process_results: !function utils.process_gen
metric_list: [{{metric: exact, aggregation: mean, higher_is_better: true}}]
metadata: {{version: 1.0}}
"""


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`entry`: folder with task package `lptest_tasks` + a dist-info declaring it (and a broken entry point)
    in `lmms_eval.tasks`; `plugin`: folder with `lpplug` (tasks/ + models.AVAILABLE_MODELS) for LMMS_EVAL_PLUGINS."""
    base = tmp_path_factory.mktemp("lmms_pkgs")
    docs = base / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    entry = base / "entry"
    pkg = entry / "lptest_tasks"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text(UTILS)
    (pkg / "mc.yaml").write_text(MC_YAML.format(name="lptest_mc", docs=docs))
    (pkg / "gen.yaml").write_text(GEN_YAML.format(name="lptest_gen", docs=docs))
    dist = entry / "lptest_tasks-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lptest-tasks\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text(
        "[lmms_eval.tasks]\nlptest = lptest_tasks\nbroken = lptest_no_such_module\n"
    )
    plugin = base / "plugin"
    (plugin / "lpplug" / "tasks").mkdir(parents=True)
    (plugin / "lpplug" / "models").mkdir()
    (plugin / "lpplug" / "__init__.py").write_text("")
    (plugin / "lpplug" / "models" / "__init__.py").write_text("AVAILABLE_MODELS = {}\n")
    (plugin / "lpplug" / "tasks" / "utils.py").write_text(UTILS)
    (plugin / "lpplug" / "tasks" / "gen.yaml").write_text(GEN_YAML.format(name="lpplug_gen", docs=docs))
    return {"entry": entry, "plugin": plugin, "base": base}


def _env(tree: Path, *extra: Path, plugins: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LMMS_EVAL_PLUGINS")}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (tree, *extra))
    env.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    if plugins:
        env["LMMS_EVAL_PLUGINS"] = plugins
    return env


def run_lmms_eval(tree: Path, out: Path, *args: str, extra: tuple[Path, ...] = (), plugins: str | None = None):
    """`python -m lmms_eval ARGS` with `tree`'s lmms_eval, forked from the trees' server (`lmms_fork`: one `tree`
    server for every tree, which imported only third-party libraries; the run imports its tree's lmms_eval itself);
    returns the run and the parsed results (or None)."""
    out.mkdir(parents=True, exist_ok=True)
    proc = run_cli([*args, "--output_path", str(out)], cwd=out, env=_env(tree, *extra, plugins=plugins), timeout=600,
                   entry="lmms_eval")
    found = sorted(out.rglob("*_results.json"))
    proc.stdout = ANSI.sub("", proc.stdout) + ANSI.sub("", proc.stderr)  # one log to search, without colours
    return proc, (json.loads(found[-1].read_text()) if found else None)


# ---------------------------------------------------------------- in-process probes (run inside a tree)

PROBE = r'''
import json, sys
checks = sys.argv[1].split(",")
out = {}
if "unwrap" in checks:
    from lmms_eval.api.instance import GenerationResult, TokenCounts, unwrap_generation_output
    inputs = ["text", GenerationResult("t", TokenCounts(1, 2, 3)), GenerationResult("t"), ("t", {"input_tokens": 3}),
              ("t", TokenCounts(output_tokens=2)), ["a", "b"], (True, False), [True, -1.5], ("t", 5), None, 3.0,
              (1.0, 2.0, 3.0), [1.0, 2.0, 3.0], (-1.5, True), (2, False), (0.0, False), [-1.5, True], [0.0, False]]
    out["unwrap"] = [repr(unwrap_generation_output(x)) for x in inputs]
if "select" in checks:
    import transformers
    import lmms_eval.models.chat.huggingface as hfm
    class Picked(Exception):
        pass
    def fake(name, real):
        def from_pretrained(*a, **k):
            raise Picked(name)
        attrs = {"_model_mapping": real._model_mapping, "from_pretrained": staticmethod(from_pretrained)}
        return type(name, (), attrs)
    autos = ("AutoModel", "AutoModelForCausalLM", "AutoModelForImageTextToText")
    saved = {n: getattr(hfm, n) for n in ("AutoConfig", *autos)}
    for name in autos:
        setattr(hfm, name, fake(name, getattr(transformers, name)))
    class RemoteConfig(transformers.PretrainedConfig):
        model_type = "levante_remote_test"
    picked = {}
    for cls in (transformers.Idefics3Config, transformers.SmolVLMConfig, transformers.Qwen2VLConfig,
                transformers.LlamaConfig, transformers.CLIPConfig, transformers.SiglipConfig, RemoteConfig):
        hfm.AutoConfig = type("AC", (), {"from_pretrained": staticmethod(lambda *a, c=cls, **k: c())})
        try:
            hfm.Huggingface(pretrained="unused", device="cpu", device_map="cpu")
        except Picked as exc:
            picked[cls.__name__] = str(exc)
    out["select"] = picked
    for name, value in saved.items():
        setattr(hfm, name, value)
if "load" in checks:
    from lmms_eval.models.chat.huggingface import Huggingface
    lm = Huggingface(pretrained=sys.argv[2], device="cpu", device_map="cpu")
    out["load"] = {"class": type(lm.model).__name__, "generate": callable(getattr(lm.model, "generate", None))}
if "filelock" in checks:
    import filelock._api
    import lmms_eval.evaluator as ev
    real = filelock._api
    sys.modules["filelock._api"] = None  # what `import filelock._api` meets under filelock >= 4
    try:
        ev._enable_reentrant_filelocks()
        out["filelock4"] = "returned"
    except ImportError as exc:
        out["filelock4"] = type(exc).__name__
    out["filelock4_marked"] = getattr(ev._enable_reentrant_filelocks, "_patched", False)
    sys.modules["filelock._api"] = real
    original = real.FileLockMeta.__call__
    ev._enable_reentrant_filelocks()
    out["filelock3"] = {"marked": ev._enable_reentrant_filelocks._patched,
                        "wrapped": real.FileLockMeta.__call__ is not original}
if "index" in checks:
    from loguru import logger
    warnings = []
    logger.add(lambda m: warnings.append(str(m)), level="WARNING")
    from lmms_eval.tasks import TaskManager
    try:
        tm = TaskManager("WARNING")
        out["index"] = {"n": len(tm.all_tasks), "lptest": sorted(t for t in tm.all_tasks if t.startswith("lptest")),
                        "templated": sorted(t for t in ("blink_art_style", "mmstar") if t in tm.all_tasks),
                        "broken_reported": any("Skipping task entry point broken" in w for w in warnings)}
    except Exception as exc:
        out["index"] = {"error": type(exc).__name__}
    local = TaskManager("WARNING", include_path=sys.argv[3], include_defaults=False)
    out["local_index"] = {k: v for k, v in sorted(local.task_index.items())}
if "llava_default" in checks:
    from lmms_eval.models.simple.llava_hf import LlavaHf
    try:
        lm = LlavaHf(pretrained=sys.argv[5], device="cpu")  # no device_map: the class's default
        out["llava_default"] = {"device_map": lm.device_map, "weights_on": str(next(lm.model.parameters()).device)}
    except Exception as exc:
        out["llava_default"] = {"error": f"{type(exc).__name__}: {exc}"}
if "refusal" in checks:
    import lmms_eval.evaluator as ev
    class Huggingface:  # as upstream's class: its stub's message names another class
        def loglikelihood(self, requests):
            raise NotImplementedError("Loglikelihood is not implemented for Qwen2.5_VL")
    class Request:
        def __init__(self, task_name):
            self.task_name = task_name
    out["refusal"] = {}
    for kind, names in (("levante", sys.argv[4].split(",")), ("other", ["mmlu", "mmlu"])):
        try:
            ev._refuse_unscorable_loglikelihood(Huggingface(), [Request(name) for name in names])
            out["refusal"][kind] = None
        except SystemExit as exc:
            out["refusal"][kind] = str(exc)
if "batch" in checks:
    # One batch of two items from two tasks (t1 doc 0, t2 doc 1), each task with its own hook: which hook read
    # which doc. The class is never loaded (no model): it stops at its first missing attribute after the lookups.
    import importlib
    from lmms_eval.api.instance import Instance
    docs = {t: {"test": [{"name": f"{t} doc {i}"} for i in range(2)]} for t in ("t1", "t2")}
    class Tokenizer:
        eos_token_id = 0
        def encode(self, text):
            return [0] * len(text)
        def decode(self, ids):
            return ""
    out["batch"] = {}
    for path in ("lmms_eval.models.simple.qwen2_vl:Qwen2_VL", "lmms_eval.models.simple.qwen2_5_vl:Qwen2_5_VL",
                 "lmms_eval.models.chat.huggingface:Huggingface"):
        module, name = path.split(":")
        cls = getattr(importlib.import_module(module), name)
        looked = []
        def hook(task):
            def read(doc):
                looked.append(f"{task} hook read {doc['name']}")
                return []
            return read
        lm = object.__new__(cls)
        lm.task_dict, lm._rank, lm.batch_size_per_gpu, lm._tokenizer = docs, 0, 2, Tokenizer()
        chat = "chat" in module
        requests = []
        for index, (task, doc_id, context) in enumerate((("t1", 0, "short"), ("t2", 1, "a longer context"))):
            gen = {"max_new_tokens": 2}
            args = ((context, hook(task), gen, doc_id, task, "test") if chat
                    else (context, gen, hook(task), doc_id, task, "test"))
            requests.append(Instance("generate_until", args, index, {"task": task, "doc_id": doc_id, "repeats": 1}))
        try:
            cls.generate_until(lm, requests)
        except Exception:
            pass
        out["batch"][name] = sorted(looked)
print("PROBE " + json.dumps(out, default=str))
'''


def probe(tree: Path, checks: str, packages: dict[str, Path], checkpoint: Path | str = "-",
          tasks: tuple[str, ...] = (), llava: Path | str = "-") -> dict:
    """Run PROBE with `tree`'s lmms_eval (and the entry-point task package on the path); return its JSON.
    `checkpoint`: the `load` check's; `tasks`: the task names the `refusal` check refuses; `llava`: the
    `llava_default` check's checkpoint."""
    proc = run_cli([PROBE, checks, str(checkpoint), str(packages["entry"] / "lptest_tasks"), ",".join(tasks),
                    str(llava)], cwd=packages["base"], env=_env(tree, packages["entry"]), entry=CODE)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][6:])


@pytest.fixture(scope="module")
def full_probe(trees, packages, tiny_vlm, tiny_llava) -> dict:
    """Every independent check on the fully patched tree, in one process."""
    return probe(trees["all"], "unwrap,select,load,filelock,index,batch,llava_default,refusal", packages, tiny_vlm,
                 tasks=_mc_variants(), llava=tiny_llava)


@pytest.fixture(scope="module")
def tiny_vlm(tiny_checkpoint: Callable[[str], Path]) -> Path:
    """A random-init Idefics3 (SmolVLM v1 family) checkpoint with a working processor, built offline."""
    return tiny_checkpoint("idefics3")


# ---------------------------------------------------------------- P1: multiple_choice / loglikelihood

# The last five probe inputs: (loss, is_greedy) pairs as a model returns them (tuples), then as the response
# cache returns them (lists, JSON-decoded). Upstream stringifies all five.
FIXED = ["((-1.5, True), None)", "((2, False), None)", "((0.0, False), None)", "((-1.5, True), None)",
         "((0.0, False), None)"]
STRINGIFIED = ["('(-1.5, True)', None)", "('(2, False)', None)", "('(0.0, False)', None)", "('[-1.5, True]', None)",
               "('[0.0, False]', None)"]


def test_unwrap_passes_loglikelihood_pairs_only_with_the_patch(trees, packages, full_probe) -> None:
    before = probe(trees[P_MC], "unwrap", packages)["unwrap"]  # neither P1 nor P1b
    after = full_probe["unwrap"]
    assert after[-5:] == FIXED and before[-5:] == STRINGIFIED
    assert after[:-5] == before[:-5]  # every other input: same output as upstream
    assert "TokenCounts(input_tokens=3" in after[3] and after[5] == "(['a', 'b'], None)"
    assert after[7] == "('[True, -1.5]', None)" and after[12] == "('[1.0, 2.0, 3.0]', None)"


def test_cached_pairs_as_lists_need_p1b(trees, packages, full_probe) -> None:
    before = probe(trees[P_MC_CACHED], "unwrap", packages)["unwrap"]  # P1 only: tuples pass, lists do not
    assert before[-5:] == FIXED[:3] + STRINGIFIED[3:]
    assert before[:-5] == full_probe["unwrap"][:-5]


@pytest.fixture(scope="module")
def end_to_end(trees, packages, tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict, Path]:
    """The fully patched tree runs an MC and a generation task found through the entry point (no --include_path)."""
    out = tmp_path_factory.mktemp("e2e")
    proc, results = run_lmms_eval(
        trees["all"], out, "--model", "dummy", "--tasks", "lptest_mc,lptest_gen", "--log_samples",
        "--use_cache", str(out / "response-cache"), extra=(packages["entry"],),
    )
    return proc, results, out


def _samples(out: Path, task: str) -> list[dict]:
    """The samples JSONL of `task` without the timestamped file name."""
    return [json.loads(ln) for ln in next(out.rglob(f"*_samples_{task}.jsonl")).open()]


def test_multiple_choice_and_generation_tasks_run_end_to_end(end_to_end) -> None:
    proc, results, out = end_to_end
    assert proc.returncode == 0, proc.stdout[-6000:]
    # dummy: loss 0.0 for every option -> argmin picks option 0; generation answers "A". Gold: 0,1,0 / A,B,A.
    assert results["results"]["lptest_mc"]["acc,none"] == pytest.approx(2 / 3)
    assert results["results"]["lptest_gen"]["exact,none"] == pytest.approx(2 / 3)
    assert "Skipping task entry point broken = lptest_no_such_module" in proc.stdout
    assert [s["doc_id"] for s in _samples(out, "lptest_mc")] == [0, 1, 2]


def test_cached_multiple_choice_results_need_p1b(trees, packages, end_to_end, tmp_path) -> None:
    """A second run with the response cache on reads the MC results the first run stored (as JSON lists)."""
    _, first, first_out = end_to_end
    args = ("--model", "dummy", "--tasks", "lptest_mc", "--use_cache", str(first_out / "response-cache"))
    again, results = run_lmms_eval(trees["all"], tmp_path / "all", *args, extra=(packages["entry"],))
    assert again.returncode == 0, again.stdout[-6000:]
    assert results["results"]["lptest_mc"] == first["results"]["lptest_mc"]
    without, results = run_lmms_eval(trees[P_MC_CACHED], tmp_path / "without", *args, extra=(packages["entry"],))
    assert results is None
    assert without.returncode == 1 and "Error during evaluation" in without.stdout


def test_multiple_choice_task_fails_without_p1(trees, packages, tmp_path) -> None:
    proc, results = run_lmms_eval(
        trees[P_MC], tmp_path / "out", "--model", "dummy", "--tasks", "lptest_mc", extra=(packages["entry"],),
    )
    assert results is None
    assert proc.returncode == 1 and "Error during evaluation" in proc.stdout


# ---------------------------------------------------------------- P2: plugin tasks, task entry points

def test_plugin_tasks_found_with_p2(trees, packages, tmp_path) -> None:
    proc, results = run_lmms_eval(
        trees["all"], tmp_path / "out", "--model", "dummy", "--tasks", "lpplug_gen",
        extra=(packages["plugin"],), plugins="lpplug,levante_tasks",
    )
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert results["results"]["lpplug_gen"]["exact,none"] == pytest.approx(2 / 3)


def test_run_without_plugins_is_unchanged_by_p2(trees, packages, end_to_end, tmp_path) -> None:
    """Outside the bug (no LMMS_EVAL_PLUGINS, plain --include_path) the moved block changes nothing."""
    _, all_results, all_out = end_to_end
    proc, results = run_lmms_eval(
        trees[P_PLUGIN], tmp_path / "out", "--model", "dummy", "--tasks", "lptest_gen", "--log_samples",
        "--include_path", str(packages["entry"] / "lptest_tasks"), extra=(packages["entry"],),
    )
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert results["results"]["lptest_gen"] == all_results["results"]["lptest_gen"]
    assert _samples(tmp_path / "out", "lptest_gen") == _samples(all_out, "lptest_gen")


def test_plugin_tasks_not_found_without_p2(trees, packages, tmp_path) -> None:
    proc, results = run_lmms_eval(
        trees[P_PLUGIN], tmp_path / "out", "--model", "dummy", "--tasks", "lpplug_gen",
        extra=(packages["plugin"],), plugins="lpplug",
    )
    assert results is None and "Tasks not found: lpplug_gen" in proc.stdout


def test_entry_point_tasks_indexed_with_p2b(trees, packages, full_probe) -> None:
    index = full_probe["index"]
    assert index["lptest"] == ["lptest_gen", "lptest_mc"] and index["broken_reported"]
    assert index["n"] > 500  # the built-ins (those the wheel can load) are still indexed
    without = probe(trees[P_ENTRY], "index", packages)
    assert without["index"]["lptest"] == [] and without["index"]["n"] > 500
    # include_defaults=False indexes only the given path, exactly as upstream does.
    assert full_probe["local_index"] == without["local_index"]
    assert sorted(full_probe["local_index"]) == ["lptest_gen", "lptest_mc"]


def test_wheel_tree_index_crashes_without_p0_where_the_wheel_lacks_templates(trees, packages, full_probe) -> None:
    """0.7.2's wheel lacks the include templates: P0 skips what cannot load. 0.7.3's ships them: no P0 there."""
    if PATCH_SET.version == "0.7.2":
        without = probe(trees[P_SKIP], "index", packages)
        assert without["index"] == {"error": "FileNotFoundError"}
        assert without["local_index"] == full_probe["local_index"]  # loadable YAMLs: indexed exactly as upstream
        assert full_probe["index"]["templated"] == []  # built-ins that need a template are skipped, not run
    else:
        assert P_SKIP is None and full_probe["index"]["templated"] == ["blink_art_style", "mmstar"]


def test_wheel_tree_index_skips_only_unloadable_yamls(full_probe) -> None:
    assert sorted(full_probe["local_index"]) == ["lptest_gen", "lptest_mc"]


def test_levante_tasks_listed_without_include_path(trees, tmp_path) -> None:
    declared = {
        m.group(1)
        for path in TASKS_DIR.rglob("*.yaml")
        for m in [re.search(r"^task:\s*(\S+)\s*$", path.read_text(), re.M)]
        if m
    }
    assert declared, "levante_tasks/tasks declares no task"
    proc, _ = run_lmms_eval(trees["all"], tmp_path / "out", "--tasks", "list")
    listed = set(re.findall(r"^ - (\S+)$", proc.stdout, re.M))
    assert proc.returncode == 0 and declared <= listed, sorted(declared - listed)


# ---------------------------------------------------------------- P3: chat huggingface model class

def test_vlm_checkpoints_get_a_generation_head_only_with_p3(trees, packages, tiny_vlm, full_probe) -> None:
    before = probe(trees[P_HF], "select,load", packages, tiny_vlm)
    after = full_probe
    assert before["load"] == {"class": "Idefics3Model", "generate": False}
    assert after["load"] == {"class": "Idefics3ForConditionalGeneration", "generate": True}
    for vlm in ("Idefics3Config", "SmolVLMConfig", "Qwen2VLConfig"):
        assert (before["select"][vlm], after["select"][vlm]) == ("AutoModel", "AutoModelForImageTextToText")
    assert after["select"]["LlamaConfig"] == "AutoModelForCausalLM"
    for outside in ("CLIPConfig", "SiglipConfig", "RemoteConfig"):  # in neither mapping: unchanged
        assert before["select"][outside] == after["select"][outside] == "AutoModel"


# ---------------------------------------------------------------- P4: filelock >= 4

def test_filelock4_fails_soft_only_with_p4(trees, packages, full_probe) -> None:
    before = probe(trees[P_FILELOCK], "filelock", packages)
    assert before["filelock4"] == "ModuleNotFoundError"
    assert full_probe["filelock4"] == "returned" and full_probe["filelock4_marked"] is False
    # With filelock 3 the deadlock workaround is installed exactly as upstream does it.
    assert before["filelock3"] == full_probe["filelock3"] == {"marked": True, "wrapped": True}


# ---------------------------------------------------------------- P5: exit status

def test_failed_evaluation_exit_status(trees, tmp_path) -> None:
    without, _ = run_lmms_eval(trees[P_EXIT], tmp_path / "a", "--model", "dummy", "--tasks", "no_such_task_x")
    with_patch, _ = run_lmms_eval(trees["all"], tmp_path / "b", "--model", "dummy", "--tasks", "no_such_task_x")
    assert "Tasks not found: no_such_task_x" in without.stdout
    assert without.returncode == 0  # upstream: a failed evaluation looks like success
    assert with_patch.returncode == 1


# ---------------------------------------------------------------- P11: group members that do not apply

ABSENT = """
class NotHere(SystemExit):
    skip_in_group = True


def absent():
    raise NotHere("lptest_absent: not in this data version")


def broken():
    raise RuntimeError("lptest_broken: a real failure")
"""


@pytest.fixture(scope="module")
def group_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An include folder: a generation task, a task that says it does not apply (`skip_in_group`), a task that
    fails for real, and groups of them."""
    folder = tmp_path_factory.mktemp("lptest_groups")
    docs = folder / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    (folder / "utils.py").write_text(UTILS)
    (folder / "absent.py").write_text(ABSENT)
    (folder / "gen.yaml").write_text(GEN_YAML.format(name="lptest_gen", docs=docs))
    (folder / "absent.yaml").write_text("task: lptest_absent\nclass: !function absent.absent\n")
    (folder / "broken.yaml").write_text("task: lptest_broken\nclass: !function absent.broken\n")
    group = "group: {name}\ntask: [{members}]\naggregate_metric_list: [{{metric: exact, aggregation: mean, " \
            "weight_by_size: true}}]\nmetadata: {{version: 1.0}}\n"
    for name, members in (("lptest_group", "lptest_gen, lptest_absent"), ("lptest_none", "lptest_absent"),
                          ("lptest_failing", "lptest_gen, lptest_broken")):
        (folder / f"{name}.yaml").write_text(group.format(name=name, members=members))
    return folder


def test_group_leaves_out_members_that_do_not_apply_only_with_p11(trees, group_tasks, tmp_path) -> None:
    def run(tree: Path, out: str, tasks: str):
        return run_lmms_eval(tree, tmp_path / out, "--model", "dummy", "--tasks", tasks, "--include_path",
                             str(group_tasks))

    without, none_results = run(trees[P_GROUP_SKIP], "a", "lptest_group")
    assert none_results is None and without.returncode != 0  # upstream: one absent member stops the whole run
    with_patch, results = run(trees["all"], "b", "lptest_group")
    assert with_patch.returncode == 0 and results is not None, with_patch.stdout[-3000:]
    assert set(results["results"]) == {"lptest_group", "lptest_gen"}
    assert results["group_subtasks"]["lptest_group"] == ["lptest_gen"]
    assert "Group lptest_group: leaving out lptest_absent: lptest_absent: not in this data version" in with_patch.stdout
    # A group left with no member, and a member that fails for real: the run stops as upstream's does.
    empty, empty_results = run(trees["all"], "c", "lptest_none")
    assert empty_results is None and empty.returncode != 0 and "not in this data version" in empty.stdout
    failing, failing_results = run(trees["all"], "d", "lptest_failing")
    assert failing_results is None and failing.returncode != 0 and "lptest_broken: a real failure" in failing.stdout


# ---------------------------------------------------------------- P12: a batch that mixes tasks

def test_each_batch_item_is_read_with_its_own_task_only_with_p12(trees, packages, full_probe) -> None:
    """`--batch_size > 1` with several tasks in one run: each item's doc comes from its own task and split, read by
    its own task's hook. Without 0015 each class reads one item with the other task's hook or doc (`qwen2_vl`,
    `qwen2_5_vl`: the pictures of another task's item)."""
    right = ["t1 hook read t1 doc 0", "t2 hook read t2 doc 1"]
    assert full_probe["batch"] == dict.fromkeys(P_BATCH_TASK, right)
    assert sorted(name for name in PATCH_SET.series if name[:4] == "0015") == sorted(P_BATCH_TASK.values())
    without = probe(trees["0015"], "batch", packages)["batch"]
    for name, looked in without.items():
        assert len(looked) == 2 and looked != right, (name, looked)  # both items read, one of them wrongly


# ---------------------------------------------------------------- P13: llava_hf's default device_map

@pytest.fixture(scope="module")
def tiny_llava(tiny_checkpoint: Callable[[str], Path]) -> Path:
    """A random-init LLaVA-1.5 checkpoint with a working processor, built offline."""
    return tiny_checkpoint("llava-1.5")


def test_llava_hf_default_device_map_follows_device_only_with_p13(trees, packages, tiny_llava, full_probe) -> None:
    """Upstream's default `device_map=""` is no device map to transformers: every one-process run without
    `device_map` failed while loading; with 0016 it is `--device`'s."""
    before = probe(trees[P_LLAVA_DEVICE], "llava_default", packages, llava=tiny_llava)["llava_default"]
    after = full_probe["llava_default"]
    assert before["error"].startswith("ValueError") and "device_map" in before["error"], before
    assert after == {"device_map": "cpu", "weights_on": "cpu"}


# ---------------------------------------------------------------- P14: the words of the `_mc` refusal

def _task_names() -> set[str]:
    """Every task (not group) our YAMLs define."""
    return {name for path in TASKS_DIR.rglob("*.yaml")
            for name in re.findall(r"^task:\s*(\S+)\s*$", path.read_text(encoding="utf-8"), re.M)}


def _mc_variants() -> tuple[str, ...]:
    """Our `_mc` variants (what the `refusal` check refuses), sorted."""
    return tuple(sorted(name for name in _task_names() if re.search(r"_mc(?=_|$)", name)))


def test_mc_refusal_names_the_class_and_what_runs_instead_only_with_p14(trees, packages, full_probe) -> None:
    """The refusal quoted the class's own NotImplementedError (`huggingface`'s names Qwen2.5_VL); with 0017 it names
    the class run and, for LEVANTE `_mc` variants, first the option scorers, then their generation variants (each one
    of our tasks); another suite's task gets no LEVANTE advice."""
    tasks, variants = _task_names(), _mc_variants()
    assert "levante_vocab_mc" in variants and "levante_trog_mc_seed1" in variants and "levante_vocab_de_mc" in variants
    before = probe(trees[P_REFUSAL_WORDS], "refusal", packages, tasks=variants)["refusal"]
    after = full_probe["refusal"]
    assert "Qwen2.5_VL" in before["levante"] and "levante_vlm_mc" not in before["levante"]
    assert "Qwen2.5_VL" not in after["levante"] and "\n" not in after["levante"]
    assert after["levante"].startswith("model class Huggingface cannot run the _mc variants (no loglikelihood): use "
                                       "--model levante_vlm_mc or levante_clip, or Huggingface on the generation "
                                       "variants (")
    (generation,) = re.findall(r"generation variants \(([^)]*)\)", after["levante"])
    assert generation.split(", ") == [re.sub(r"_mc(?=_|$)", "", name, count=1) for name in variants]
    assert set(generation.split(", ")) <= tasks and "levante_trog_seed1" in generation.split(", ")
    assert after["levante"].endswith(f"); refused: {', '.join(variants)}")
    assert after["other"] == ("model class Huggingface cannot run mmlu: multiple_choice scores each option by "
                              "loglikelihood, which Huggingface does not implement")


# ---------------------------------------------------------------- P16: one model per --config list

# Counts constructions and cleanings of lmms-eval's own `dummy` model in every process that has this folder on its
# path; each model holds a torch module, as real classes do, and answers only while it still holds it (upstream's
# evaluate() ends with lm.clean(), which deletes every module: a reused model must not have been cleaned).
BUILD_COUNTER = '''
import os
import torch
from lmms_eval.models.simple.dummy import Dummy
_built, _clean, _generate = Dummy.__init__, Dummy.clean, Dummy.generate_until
def _log(line):
    with open(os.environ["LP_BUILDS"], "a") as log:
        log.write(line + "\\n")
def _counted(self, *args, **kwargs):
    _log(str(kwargs.get("batch_size")))
    _built(self, *args, **kwargs)
    self.weights = torch.nn.Linear(1, 1)
def _cleaned(self):
    _log("clean")
    _clean(self)
def _answer(self, requests, *args, **kwargs):
    self.weights  # AttributeError once cleaned
    return _generate(self, requests, *args, **kwargs)
Dummy.__init__, Dummy.clean, Dummy.generate_until = _counted, _cleaned, _answer
'''


def test_a_config_list_builds_its_model_once_per_setting_only_with_p16(trees, packages, tmp_path,
                                                                       monkeypatch) -> None:
    """Three runs of one `--config` list: two seeds at batch size 1, then batch size 2. Upstream builds the model
    for every run (3) and cleans each after its run; with 0019 the second run reuses the first's model, uncleaned,
    and the third builds its own after cleaning it (2 builds, 1 cleaning); every run still finishes."""
    counter = tmp_path / "counter"
    counter.mkdir()
    (counter / "sitecustomize.py").write_text(BUILD_COUNTER)
    runs = [{"tasks": "lptest_gen", "seed": [seed, 1234 + seed, 1234 + seed, 1234 + seed], "batch_size": size}
            for seed, size in ((0, 1), (1, 1), (0, 2))]
    (tmp_path / "runs.yaml").write_text(json.dumps(runs))
    built = {}
    for name in ("all", BY_NUMBER["0019"]):
        log = tmp_path / f"builds-{name}.txt"
        monkeypatch.setenv("LP_BUILDS", str(log))
        proc, _ = run_lmms_eval(trees[name], tmp_path / f"out-{name}", "--model", "dummy", "--config",
                                str(tmp_path / "runs.yaml"), "--limit", "2", extra=(packages["entry"], counter))
        assert proc.returncode == 0, proc.stdout[-3000:]
        assert proc.stdout.count("|lptest_gen|") == 3, proc.stdout[-3000:]  # three result tables
        built[name] = log.read_text().split()
    assert built[BY_NUMBER["0019"]] == ["1", "clean", "1", "clean", "2", "clean"]
    assert built["all"] == ["1", "clean", "2"]
# ---------------------------------------------------------------- P15, P17, P18, P19: what a fresh process loads

# Steps of a fresh-process probe, run in one process that has not imported lmms-eval, `evaluate` or nltk
# (`fresh_probe`); each records what it saw in `seen`. A tree without the patch runs the steps of that patch's test in
# a process of its own (forked). The fully patched tree runs `main`, `punctuation` and `run` (what start-up and a
# LEVANTE run load) in one new interpreter (`fresh_all`), in the order below, which keeps each check as exact as in a
# process of its own: a check that something is not loaded (or not built) comes before every step that could load
# it, since sys.modules only grows. Its fallbacks that must load `evaluate` and the CHAIR module (`hf_metric`,
# `chair_metrics`) run in a fork (`fixed_fallbacks`), and so does `index` on both trees (P17: which loader parses the
# YAMLs, not what start-up imports; in forks both index the same folders, while a new interpreter finds the installed
# levante-tasks' tasks, a fork the test process's: the same folder only where the checkout is the installed one).
FRESH_STEPS = {
    # P15: `evaluate` is not imported by importing lmms-eval's CLI.
    "main": r"""
from lmms_eval.__main__ import cli_evaluate
seen["evaluate"] = {"import": "evaluate" in sys.modules}
""",
    # P19: the punctuation table is not built at import; built by a filter's first use, which filters the same.
    "punctuation": r"""
from lmms_eval.filters import extraction
built = getattr(extraction, "_punctuation_table", None)
seen["punctuation"] = {"at_import": "punct_tbl" in vars(extraction.ExtendedRegexFilter)
                       or built.cache_info().currsize > 0}
regex_filter = extraction.ExtendedRegexFilter(regex_pattern=r"(\w+)", ignore_punctuation=True)
seen["punctuation"]["filtered"] = regex_filter.filter_ignores("«Hola», ¿qué tal? — ok!")
seen["punctuation"]["at_first_use"] = built is None or built.cache_info().currsize == 1
seen["punctuation"]["twice"] = regex_filter.filter_ignores("a.b") == "ab"
""",
    # P17: which YAML loader parses the index's loads (LP_TASKS, LP_EXTRA) and a task's full config; PyYAML's own
    # functions are put back afterwards.
    "index": r"""
import os, yaml
import lmms_eval
from lmms_eval import utils
TASKS, EXTRA = os.environ["LP_TASKS"], os.environ["LP_EXTRA"]
ROOT = os.path.dirname(os.path.dirname(lmms_eval.__file__))  # the tree: index paths are shown below it
loaders = []
real_load, real_full_load = yaml.load, yaml.full_load
def counted_load(stream, Loader):
    loaders.append(Loader.__name__)
    return real_load(stream, Loader)
yaml.load = counted_load
yaml.full_load = lambda stream: counted_load(stream, yaml.FullLoader)
from lmms_eval.tasks import TaskManager
index = TaskManager(include_path=[TASKS, EXTRA]).task_index
indexed = list(loaders)
full = utils.load_yaml_config(TASKS + "/trog/levante_trog.yaml", mode="full")
yaml.load, yaml.full_load = real_load, real_full_load
seen["index"] = {"loaders": {name: indexed.count(name) for name in set(indexed)}, "loads": len(indexed),
                 "full_loaders": sorted(set(loaders[len(indexed):])),
                 "index": {name: [entry["type"], str(entry["yaml_path"]).replace(ROOT, "<tree>")]
                           for name, entry in index.items()},
                 "full": full}
""",
    # P15 and P18: a run of LEVANTE tasks (generation and MC) imports neither `evaluate` nor the CHAIR module's nltk.
    "run": r"""
sys.argv = ["lmms-eval", "--model", "dummy", "--tasks", "levante_vocab,levante_vocab_mc", "--limit", "2",
            "--output_path", "out", "--verbosity", "WARNING"]
try:
    cli_evaluate()
    seen["evaluate"]["exit"] = 0
except SystemExit as exc:
    seen["evaluate"]["exit"] = exc.code
seen["evaluate"]["run"] = "evaluate" in sys.modules
seen["chair"] = {"run": "nltk" in sys.modules}
""",
    # P15: a metric looked up in HF Evaluate still imports it.
    "hf_metric": r"""
from lmms_eval.api.registry import get_metric
looked_up = get_metric("levante_no_such_metric", hf_evaluate_metric=True)  # upstream: None
seen.setdefault("evaluate", {})["hf_metric"] = looked_up
seen["evaluate"]["fallback"] = "evaluate" in sys.modules
""",
    # P18: a CHAIR metric still gets its bootstrapped stderr, the mean its own.
    "chair_metrics": r"""
from lmms_eval.api.metrics import mean, mean_stderr, stderr_for_metric
from lmms_eval.tasks.coco_cap_chair.utils import coco_cap_chair_aggregate_results_chair_i as chair_i
seen.setdefault("chair", {})["mean"] = stderr_for_metric(mean, 10) is mean_stderr
seen["chair"]["chair"] = stderr_for_metric(chair_i, 10).__code__.co_names  # bootstrap_stderr: the identity match
""",
}


FRESH_ABSENT = ("lmms_eval", "evaluate", "nltk")  # what a fresh probe's process has not imported when it starts


def fresh_probe(tree: Path, steps: tuple[str, ...], cwd: Path, env: dict[str, str], *, real: bool = False) -> dict:
    """Run FRESH_STEPS `steps` in order with `tree`'s lmms_eval in `cwd` (`env` added), in one process that has not
    imported lmms-eval, `evaluate` or nltk: a new interpreter (`real`), else a fork of the trees' server, which
    imported only third-party libraries (`lmms_fork.TREE_LIBRARIES`: lmms-eval's CLI imports most of them; torchvision
    and transformers' modelling code only a model class or HF metric does), so as to those three modules (what the
    steps look for, checked as `held`) each step sees what it would see in a new interpreter; return what they saw."""
    script = (f"import json, sys\nseen = {{}}\nheld = [m for m in {FRESH_ABSENT!r} if m in sys.modules]\n"
              + "".join(FRESH_STEPS[step] for step in steps)
              + "shown = lambda value: getattr(value, '__qualname__', str(value))\n"
              + "print('PROBE ' + json.dumps({'held': held, 'seen': seen}, default=shown))\n")
    cwd.mkdir(exist_ok=True)
    if real:
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env={**_env(tree), **env}, cwd=cwd, timeout=600)
    else:
        proc = run_cli([script], cwd=cwd, env={**_env(tree), **env}, entry=CODE)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    probed = json.loads(lines[-1][6:])
    assert probed["held"] == [], probed["held"]  # what the steps look for was not imported before them
    return probed["seen"]


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The fresh probes' inputs: fixture data for the runs, and the index step's folders (ours, and one extra holding
    a YAML libyaml refuses: a surrogate-pair escape, as json.dumps writes an emoji)."""
    from levante_tasks.testing.fixture_data import write_fixture

    base = tmp_path_factory.mktemp("fresh_inputs")
    write_fixture(base / "data")
    (base / "extra").mkdir()
    (base / "extra" / "lp_emoji.yaml").write_text('task: lp_emoji\ndataset_path: "\\ud83d\\ude00"\n')
    return {"LEVANTE_DATA_DIR": str(base / "data"), "LP_TASKS": str(TASKS_DIR), "LP_EXTRA": str(base / "extra")}


@pytest.fixture(scope="module")
def fresh_all(trees, fresh_env, tmp_path_factory) -> dict:
    """What the fully patched tree's start-up and a LEVANTE run load, in one new interpreter (FRESH_STEPS `main`,
    `punctuation`, `run`)."""
    steps = ("main", "punctuation", "run")
    return fresh_probe(trees["all"], steps, tmp_path_factory.mktemp("fresh_all"), fresh_env, real=True)


@pytest.fixture(scope="module")
def fixed_fallbacks(trees, fresh_env, tmp_path_factory) -> dict:
    """The fully patched tree's fallbacks (FRESH_STEPS `hf_metric`, `chair_metrics`), in one forked process."""
    return fresh_probe(trees["all"], ("hf_metric", "chair_metrics"), tmp_path_factory.mktemp("fixed_fallbacks"),
                       fresh_env)


# ---------------------------------------------------------------- P15: HF `evaluate` imported on demand

def test_evaluate_imported_only_by_an_hf_metric_with_p15(trees, fresh_env, fresh_all, fixed_fallbacks,
                                                         tmp_path) -> None:
    """Upstream imported HF `evaluate` (about 6 s of CPU) at every start-up; with 0018 importing lmms-eval and running
    LEVANTE tasks (generation and MC) never imports it, and a metric looked up in HF Evaluate still does."""
    without = fresh_probe(trees[P_LAZY_EVALUATE], ("main", "run", "hf_metric"), tmp_path, fresh_env)
    assert fresh_all["evaluate"] == {"import": False, "exit": 0, "run": False}
    assert fixed_fallbacks["evaluate"] == {"hf_metric": None, "fallback": True}
    assert without["evaluate"] == {"import": True, "exit": 0, "run": True, "hf_metric": None, "fallback": True}


# ---------------------------------------------------------------- P17: task YAMLs parsed by libyaml

def test_task_yamls_are_parsed_by_libyaml_to_the_same_index_only_with_p17(trees, fresh_env, tmp_path) -> None:
    """Upstream parsed every task YAML (thousands per start-up) with PyYAML's pure-Python loader; with 0020 libyaml's
    full loader parses the index's loads, a file it refuses (a surrogate-pair escape, as json.dumps writes an emoji)
    is parsed again by the pure-Python loader, and the task index and a task's full config (its `!function` hooks,
    still loaded by the pure-Python loader) are the same."""
    seen = {name: fresh_probe(trees[name], ("index",), tmp_path / name, fresh_env)["index"]
            for name in ("all", P_LIBYAML)}
    assert seen["all"]["loaders"] == {"CFullLoader": seen["all"]["loads"] - 1, "FullLoader": 1}  # the emoji file
    assert seen[P_LIBYAML]["loaders"] == {"FullLoader": seen[P_LIBYAML]["loads"]}
    assert seen["all"]["full_loaders"] == seen[P_LIBYAML]["full_loaders"] == ["FullLoader"]
    assert seen["all"]["loads"] == seen[P_LIBYAML]["loads"] + 1 > 1000  # the built-in tasks are indexed too
    assert seen["all"]["index"] == seen[P_LIBYAML]["index"]
    assert {"levante_trog", "lp_emoji"} <= set(seen["all"]["index"])
    assert seen["all"]["full"] == seen[P_LIBYAML]["full"]
    assert seen["all"]["full"]["process_results"] == "process_results"  # a `!function` hook, imported


# ---------------------------------------------------------------- P18: the CHAIR task module imported on demand

def test_the_chair_module_is_imported_only_for_its_metrics_with_p18(trees, fresh_env, fresh_all, fixed_fallbacks,
                                                                   tmp_path) -> None:
    """Upstream imported the CHAIR task module (and nltk, over a second of CPU) at every bootstrapped stderr; with
    0021 a LEVANTE run never imports it, and a CHAIR metric still gets its bootstrap as before."""
    without = fresh_probe(trees[P_LAZY_CHAIR], ("main", "run", "chair_metrics"), tmp_path, fresh_env)
    assert not fresh_all["evaluate"]["exit"] and not without["evaluate"]["exit"]  # both runs finished
    seen = {"all": {**fresh_all["chair"], **fixed_fallbacks["chair"]}, P_LAZY_CHAIR: without["chair"]}
    assert seen["all"]["run"] is False and seen[P_LAZY_CHAIR]["run"] is True
    assert seen["all"]["mean"] is seen[P_LAZY_CHAIR]["mean"] is True
    assert seen["all"]["chair"] == seen[P_LAZY_CHAIR]["chair"] == ["bootstrap_stderr"]


# ---------------------------------------------------------------- P19: the punctuation table built on first use

def test_the_punctuation_table_is_built_on_first_use_only_with_p19(trees, fresh_env, fresh_all, tmp_path) -> None:
    """Upstream built ExtendedRegexFilter's punctuation table (1.1M Unicode lookups) when lmms-eval was imported;
    with 0022 it is built when a filter first ignores punctuation, and filters the same."""
    without = fresh_probe(trees[P_LAZY_PUNCTUATION], ("main", "punctuation"), tmp_path, fresh_env)
    seen = {"all": fresh_all["punctuation"], P_LAZY_PUNCTUATION: without["punctuation"]}
    assert seen["all"]["at_import"] is False and seen[P_LAZY_PUNCTUATION]["at_import"] is True
    assert seen["all"]["filtered"] == seen[P_LAZY_PUNCTUATION]["filtered"] == "Hola qué tal  ok"
    assert seen["all"]["twice"] is seen[P_LAZY_PUNCTUATION]["twice"] is True
    assert seen["all"]["at_first_use"] is True
