"""`levante-tasks summarize RUN_DIR... --out DIR` and `levante-tasks verify RUN_DIR...`.

summarize: every lmms-eval run and inspect_ai `.eval` log under the run folders -> one model x task matrix
(matrix.csv, matrix.json, summary.md, heatmap.png for LEVANTE cells, runs/<run>/summary.json, croissant.json:
the results card), and for L0 runs a per-bin table in summary.md and l0_bins.png (summary.l0_bins). A run or task
that cannot be read
is one line each; the rest is still summarized and the exit status is 1 unless --allow-partial. Refused comparisons and
conflicting duplicates are errors (exit 2, nothing written). `--out` is replaced whole (a staging folder
swapped in), and only when it is empty, absent or an earlier summary (it holds matrix.json). A RUN_DIR that does
not exist is refused up front (one line, exit 2, nothing written).
verify: recompute the reported metrics from the samples files, re-parse each saved response against its record
(core.reparse) and check recorded provenance against this installation; one line per mismatch, exit 1 if any.
These prove that a run's files agree with each other, not that a model wrote them; `--rerun K` re-runs K sampled
items through the recorded model (summary.rerun) and compares the responses. A --data-dir that is not a folder is
refused up front (one line, exit 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from levante_tasks.atomic import clean_stale, replaceable_dir, staged_dir
from levante_tasks.errors import LevanteError, display_path
from levante_tasks.runs.discover import INSPECT_AI, LMMS_EVAL, RunFiles, discover, run_labels
from levante_tasks.runs.lmms import FileProblem, RunReader, cyclic_gc_paused
from levante_tasks.runs.model import model_label
from levante_tasks.schema import layout
from levante_tasks.summary.inspect_logs import parse_eval
from levante_tasks.summary.units import ParsedRun, parse_run
from levante_tasks.summary.verify import Report, Verifier, verify_runs

if TYPE_CHECKING:
    from levante_tasks.summary.rerun import RerunPlan
# summarize's writers (l0_bins, writers, matrix, card) and verify --rerun's module are imported by the function that
# uses them: `verify` does not pay for them (l0 and its tables, the matrix, the card)

OUTPUT_MARKER = "matrix.json"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `summarize` and `verify` subcommands."""
    parser = subparsers.add_parser(
        "summarize", help="summarize lmms-eval runs and inspect_ai logs into one model x task matrix with a report",
        description="Read every *_results.json (and its samples files) and every inspect_ai *.eval log under "
        "RUN_DIR... and write matrix.csv, "
        "matrix.json, summary.md, heatmap.png (LEVANTE cells; l0_bins.png for L0 runs), runs/<run>/summary.json "
        "and croissant.json (the results card) into --out.")
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR",
                        help="lmms-eval output folder(s) and inspect_ai log folder(s)")
    parser.add_argument("--out", required=True, type=Path, help="output folder (replaced whole)")
    parser.add_argument("--allow-partial", action="store_true",
                        help="exit 0 even when some runs or tasks could not be read (they are still reported)")
    parser.add_argument("--allow-mismatch", action="store_true",
                        help="keep cells that differ in limit, budget, prompt, dataset or patch set as separate, "
                        "flagged cells instead of refusing")
    parser.add_argument("--no-plot", action="store_true", help="skip heatmap.png and l0_bins.png")
    parser.add_argument("--verify", action="store_true",
                        help="also run `verify`'s checks (with the installation's), reading each file once for both; "
                        "its mismatch lines as `verify` prints them, exit 1 if any")
    parser.add_argument("--data-dir", type=Path,
                        help="prepared data dir: the data cards the results card points to and --verify's dataset "
                        "fingerprints (default: $LEVANTE_DATA_DIR or the cache)")
    parser.set_defaults(func=run_summarize)

    check = subparsers.add_parser(
        "verify", help="recompute a run's metrics from its samples and check its provenance",
        description="Recompute every metric in each *_results.json under RUN_DIR from the samples files, "
        "re-parse every saved response with this installation's parser and the record's presented order, and "
        "check the recorded task version, task source hash, dataset fingerprint, lmms-eval commit and patch set "
        "against this installation. These prove that the files agree, not that a model wrote them (a response edited "
        "together with its record, metrics and results passes): --rerun K re-runs K sampled items through the "
        "recorded model and compares the responses. One line per mismatch; exit 1 if any.")
    check.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="lmms-eval output folder(s)")
    check.add_argument("--data-dir", type=Path, help="prepared data dir (default: $LEVANTE_DATA_DIR or the cache)")
    check.add_argument("--skip-installation", action="store_true",
                       help="only recompute metrics; do not compare provenance with this installation")
    check.add_argument("--rerun", type=int, metavar="K",
                       help="also re-run K sampled items of each run through its recorded model, model_args and "
                       "greedy decoding (lmms-eval, this machine) and compare the responses with the saved ones")
    check.add_argument("--rerun-seed", type=int, default=0, metavar="N",
                       help="seed of the item sample --rerun draws (default: 0)")
    check.add_argument("--rerun-trust-remote-code", action="store_true",
                       help="let --rerun load a model whose recorded model_args set trust_remote_code (it runs the "
                            "Python code its checkpoint ships; refused without this flag)")
    check.set_defaults(func=run_verify)


def check_out(out: Path) -> Path:
    """The folder to replace (a symlink's target); refuse a file or a folder that is not an earlier summary."""
    return replaceable_dir(out, OUTPUT_MARKER, "summary")


def check_run_dirs(run_dirs: list[Path]) -> None:
    """Refuse up front (one line, nothing written) a RUN_DIR that does not exist or is not a folder."""
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            what = "is not a folder" if run_dir.exists() else "does not exist"
            raise LevanteError(f"{display_path(run_dir)}: run folder {what}; nothing was summarized or written")


def _run_summary(parsed: ParsedRun | None, label: str, problems: list[str], backend: str) -> dict[str, Any]:
    """runs/<run>/summary.json: what was parsed from one run (status, model, protocol, per-task metrics)."""
    from levante_tasks.summary import writers

    doc: dict[str, Any] = {"schema_version": writers.SCHEMA_VERSION, "source": label, "backend": backend,
                           "problems": problems}
    if parsed is None:
        return {**doc, "status": "failed"}
    if parsed.summary is not None:
        model = {k: parsed.model[k] for k in ("adapter", "public_id", "revision")}
        return {**doc, **parsed.summary, "status": "completed" if not problems else "partial", "model": model}
    results, run = parsed.results, parsed.results["config"]
    tasks = {}
    for name, info in sorted(parsed.tasks.items()):
        entry = {k: v for k, v in info.items() if k != "provenance"}
        if info.get("status") == "parsed":
            entry["metrics"] = {k: v for k, v in results["results"].get(name, {}).items()
                                if isinstance(v, int | float) and not isinstance(v, bool)}
            entry["samples"] = results["n-samples"].get(name)
            entry["higher_is_better"] = (results.get("higher_is_better") or {}).get(name)
            entry["provenance"] = info["provenance"]
        tasks[name] = entry
    status = "completed" if not problems else "partial"
    return {**doc, "status": status, "date": results.get("date"),
            "model": {"adapter": parsed.model["adapter"], "public_id": parsed.model["public_id"],
                      "revision": parsed.model["revision"]},
            "protocol": {"batch_size": run.get("batch_size"), "limit": run.get("limit"), "offset": run.get("offset"),
                         "gen_kwargs": run.get("gen_kwargs"),
                         "seeds": [run.get(f"{k}_seed") for k in ("random", "numpy", "torch", "fewshot")]},
            "efficiency": results.get("efficiency"), "tasks": tasks}


def _model_text(model: dict[str, str]) -> str:
    """A run's model as the summary's tables name it."""
    return model_label({"model": model["public_id"], "revision": model["revision"], "adapter": model["adapter"]})


def _parse(run: RunFiles, reader: RunReader) -> ParsedRun:
    """Units of one run, by the harness that wrote it (an lmms-eval run's files read through `reader`)."""
    return parse_eval(run) if run.kind == INSPECT_AI else parse_run(run, reader)


def summarize_runs(run_dirs: list[Path], out: Path, *, allow_mismatch: bool = False,
                   plot: bool = True, data_dir: Path | None = None, verifier: Verifier | None = None) -> dict[str, Any]:
    """Summarize the runs under `run_dirs` into `out`; returns matrix.json's content. Its results card points to
    the data cards found in `data_dir` (default: layout.data_dir()). With a `verifier`, each run is also verified
    in the same pass, its files read once for both (`verifier.report`: what `verify_runs` reports).

    Runs or tasks that could not be read are in its `problems` (the rest is summarized). Raises LevanteError
    when nothing could be read, on conflicting duplicates and (unless `allow_mismatch`) on cells that claim
    comparison but differ.
    """
    from levante_tasks.summary import l0_bins, writers
    from levante_tasks.summary import matrix as matrix_mod
    from levante_tasks.summary.card import write_results_card

    check_run_dirs(run_dirs)
    target = check_out(out)
    problems: list[str] = []
    parsed_runs: list[ParsedRun] = []
    entries: list[tuple[ParsedRun | None, str, list[str], str]] = []
    with cyclic_gc_paused():  # what is kept of each run piles up as runs are read: no walk of it per read
        for run_dir, label in zip(run_dirs, run_labels(run_dirs), strict=True):
            runs, found = discover(run_dir, label)
            problems += found
            entries += [(None, line.split(": ", 1)[0], [line], LMMS_EVAL) for line in found]
            if verifier is not None:
                verifier.report.lines += found
            for run in runs:
                reader = RunReader()  # this run's files, freed with it
                try:
                    parsed = _parse(run, reader)
                except FileProblem as exc:
                    problems.append(str(exc))
                    entries.append((None, run.label, [str(exc)], run.kind))
                else:
                    problems += parsed.problems
                    parsed_runs.append(parsed)
                    entries.append((parsed, run.label, parsed.problems, run.kind))
                if verifier is not None:
                    verifier.check_run(run, reader)
    units = [u for p in parsed_runs for u in p.units]
    l0 = [section for p in parsed_runs if p.files.kind == LMMS_EVAL
          if (section := l0_bins.run_section(p.files.label, _model_text(p.model), p.results)) is not None]
    if not units and not l0:
        raise LevanteError("\n".join([*problems, "no LEVANTE or L0 task results could be read: nothing to summarize"]))
    built = matrix_mod.build(units, allow_mismatch=allow_mismatch)
    taken: set[str] = set()
    summaries = {writers.run_id(label, taken): _run_summary(p, label, lines, kind) for p, label, lines, kind in entries}
    runs_index = [{"run_id": rid, "source": s["source"], "status": s["status"], "problems": s["problems"]}
                  for rid, s in summaries.items()]
    document = writers.matrix_document(built, runs_index, problems, l0)
    clean_stale(target.parent)
    with staged_dir(target) as staging:
        writers.write_all(staging, document, summaries, plot)
        write_results_card(staging, {"results": "matrix.csv"}, {"matrix.json": "the summary's matrix.json"},
                           data_dir)
    return document


def run_summarize(args: argparse.Namespace) -> int:
    """CLI: summarize (and --verify); problems and mismatches are one line each on stderr; exit 1 on problems unless
    --allow-partial, and on any mismatch."""
    check_data_dir(args.data_dir, "nothing was summarized or written")
    check_run_dirs(args.run_dirs)  # refused up front: their one line, before verify has anything to say
    check_out(args.out)
    verifier = Verifier(args.data_dir) if args.verify else None
    try:
        document = summarize_runs(args.run_dirs, args.out, allow_mismatch=args.allow_mismatch,
                                  plot=not args.no_plot, data_dir=args.data_dir, verifier=verifier)
    except (LevanteError, OSError):  # after the runs were read (nothing to summarize, a full disk): verify's lines too
        if verifier is not None:
            _print_report(verifier.report, [])
        raise
    for line in document["problems"]:
        print(f"levante-tasks: error: {line}", file=sys.stderr)
    print(f"summarized {len(document['cells'])} cell(s): {len(document['models'])} model(s) x "
          f"{len(document['columns'])} task column(s) from {len(document['runs'])} run(s); outputs in "
          f"{display_path(args.out)}")
    mismatches = _print_report(verifier.report, []) if verifier is not None else []
    return 1 if (document["problems"] and not args.allow_partial) or mismatches else 0


def _print_report(report: Report, more: list[str], rerun_note: str = "") -> list[str]:
    """Print verify's mismatch lines (the report's, then `more`) on stderr and its closing line; the lines."""
    lines = [*report.lines, *more]
    for line in lines:
        print(f"levante-tasks: mismatch: {line}", file=sys.stderr)
    print(f"verified {report.runs} run(s), {report.tasks} task(s){rerun_note}: "
          f"{len(lines) or 'no'} mismatch{'es' if len(lines) != 1 else ''}")
    return lines


def check_data_dir(data_dir: Path | None, undone: str = "nothing was verified") -> None:
    """Refuse up front (one line ending with `undone`) a --data-dir that does not exist or is not a folder (`~` read
    as the data dir reads it: `--data-dir=~/data` reaches us unexpanded)."""
    folder = layout.data_dir(data_dir) if data_dir is not None else None
    if folder is not None and not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise LevanteError(f"--data-dir {display_path(data_dir)}: {what}; {undone}")


def _rerun_items(args: argparse.Namespace, plans: list[RerunPlan]) -> tuple[int, list[str]]:
    """Re-run each plan (its lines on stdout, `rerun: ...`); (items re-run, mismatch lines)."""
    from levante_tasks.summary.rerun import rerun

    mismatches: list[str] = []
    for plan in plans:
        shown, differ = rerun(plan, args.data_dir)
        for line in shown:
            print(f"rerun: {line}", flush=True)
        mismatches += differ
    return sum(len(plan.items) for plan in plans), mismatches


def run_verify(args: argparse.Namespace) -> int:
    """CLI: verify (and --rerun); one line per mismatch on stderr; exit 1 if any."""
    check_data_dir(args.data_dir)
    if args.rerun is not None and args.rerun < 1:
        raise LevanteError(f"--rerun {args.rerun}: the number of items to re-run must be 1 or more")
    from levante_tasks.summary.rerun import plan_reruns

    plans, cannot = plan_reruns(args.run_dirs, args.rerun, args.rerun_seed,
                                   args.rerun_trust_remote_code) if args.rerun else ([], [])
    report = verify_runs(args.run_dirs, args.data_dir, installation=not args.skip_installation)
    rerun_count, differ = _rerun_items(args, plans)
    rerun_note = f"; re-ran {rerun_count} item(s), {len(differ)} differ" if args.rerun else ""
    return 1 if _print_report(report, [*cannot, *differ], rerun_note) else 0
