"""Issue 12.1: children's responses are mapped to each item's canonical options by their text (or image key),
never by their position in a trial's own answer-plus-distractors list; what matches no option is counted and
listed; every (item, bin) distribution sums to 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from compare_inputs import (
    canonical,
    compare,
    compared,
    exclusions,
    records,
    shuffle_distractors,
    trog_trials,
    write_items,
)
from faults import one_error_line, run_cli
from shared_paths import irt_fixture_dir

DIST_KEY = ["item_uid", "bin_low", "option_index"]


def distributions(out: Path) -> pd.DataFrame:
    """human_distributions.csv sorted by item, bin and option."""
    return pd.read_csv(out / "human_distributions.csv").sort_values(DIST_KEY).reset_index(drop=True)


def test_per_child_distractor_order_gives_the_canonical_distributions(tmp_path: Path) -> None:
    trials = trog_trials()
    recs = records(tmp_path / "records.csv")
    items = write_items(canonical(trials), tmp_path / "items.csv")
    reference, _ = compare(tmp_path, trials, recs, "reference", items=items)
    shuffled, summary = compare(tmp_path, shuffle_distractors(trials), recs, "shuffled", items=items)
    want, got = distributions(reference), distributions(shuffled)
    assert len(got) > 1000
    pd.testing.assert_frame_equal(got.drop(columns="task"), want.drop(columns="task"))
    sums = got.groupby(["item_uid", "bin_low"])["p"].sum()
    np.testing.assert_allclose(sums, 1.0, rtol=0, atol=1e-12)
    options = canonical(trials)
    assert all(options[u][k] == o for u, k, o in zip(got["item_uid"], got["option_index"], got["option"], strict=True))
    kl_want = pd.read_csv(reference / "kl_summary.csv").set_index("model")
    kl_got = pd.read_csv(shuffled / "kl_summary.csv").set_index("model")
    np.testing.assert_allclose(kl_got[["beta", "mean_kl"]], kl_want[["beta", "mean_kl"]], rtol=1e-12)
    assert compared(summary)["option_source"] == "items file"
    assert "trials_option_order_unknown" not in exclusions(summary)


def test_without_items_there_is_no_kl_never_a_guessed_order(tmp_path: Path) -> None:
    """Without --items the models' option order is unknown (the trials' own order may differ): no KL, counted;
    theta and the difficulty correlation need no option texts and are still computed."""
    trials = trog_trials()
    out, summary = compare(tmp_path, trials, records(tmp_path / "records.csv"), items=None)
    assert pd.read_csv(out / "human_distributions.csv").empty and "beta" not in pd.read_csv(out / "kl_summary.csv")
    assert exclusions(summary)["trials_without_option_texts"] == len(trials)
    aligned = compared(summary)["models"]["aligned"]
    assert "--items" in aligned["kl"]["note"] and np.isfinite(aligned["theta"])
    assert compared(summary)["option_source"].startswith("none")


def test_trial_whose_answer_is_not_option_0_is_dropped_and_counted(tmp_path: Path) -> None:
    """A miscoded `answer` (here: the first distractor, the answer moved into the distractors) is not aligned."""
    trials = trog_trials()
    bad = trials["run_id"] == trials["run_id"].iloc[0]
    first = trials.loc[bad, "distractors"].str.split(",").str[0]
    rest = trials.loc[bad, "distractors"].str.split(",").str[1:].str.join(",")
    trials.loc[bad, "distractors"] = trials.loc[bad, "answer"] + "," + rest
    trials.loc[bad, "answer"] = first
    out, summary = compare(tmp_path, trials, records(tmp_path / "records.csv"))
    assert exclusions(summary)["trials_answer_not_canonical_answer"] == int(bad.sum()) > 0
    assert "trials_option_set_differs" not in exclusions(summary)  # the set is the same: only the answer moved


def test_items_with_two_identical_options_are_excluded_and_counted(tmp_path: Path) -> None:
    trials = trog_trials()
    options = canonical(trials)
    twin = sorted(options)[0]
    options[twin] = [options[twin][0], options[twin][1], " " + options[twin][1].upper(), options[twin][3]]
    out, summary = compare(tmp_path, trials, records(tmp_path / "records.csv"),
                           items=write_items(options, tmp_path / "items.csv"))
    counted = exclusions(summary)
    assert counted["items_with_duplicate_options"] == 1
    assert counted["trials_item_with_duplicate_options"] == int((trials["item_uid"] == twin).sum())
    assert twin not in set(pd.read_csv(out / "human_distributions.csv", dtype={"item_uid": str})["item_uid"])


def test_unmatched_responses_are_counted_and_listed_and_image_keys_match(tmp_path: Path) -> None:
    trials = trog_trials()
    recs = records(tmp_path / "records.csv")
    items = write_items(canonical(trials), tmp_path / "items.csv")
    reference, _ = compare(tmp_path, trials, recs, "reference", items=items)
    changed = trials.copy()
    changed.loc[[0, 1, 2], "response"] = "no-such-option"
    keyed = changed.index[(changed.index > 2) & (changed.index < 40)]
    changed.loc[keyed, "response"] = ["visual/trog/" + r.upper() + ".webp" for r in changed.loc[keyed, "response"]]
    out, summary = compare(tmp_path, changed, recs, "changed", items=items)
    assert exclusions(summary)["trials_response_unmatched"] == 3
    unmatched = pd.read_csv(out / "unmatched_responses.csv").sort_values("item_uid")
    assert unmatched["item_uid"].tolist() == sorted(trials.loc[[0, 1, 2], "item_uid"])
    assert unmatched["response"].eq("no-such-option").all() and unmatched["n"].eq(1).all()
    want, got = distributions(reference), distributions(out)
    # the image-path responses count exactly as their keys did; only the three unmatched trials are missing
    assert want["n"].sum() - got["n"].sum() == 3


def test_trials_listing_another_option_set_are_dropped_and_counted(tmp_path: Path) -> None:
    trials = trog_trials()
    recs = records(tmp_path / "records.csv")
    items = write_items(canonical(trials), tmp_path / "items.csv")
    changed = trials.copy()
    changed.loc[[10, 11], "distractors"] = "other-a,other-b,other-c"
    changed.loc[12, "distractors"] = ""  # not listed: cannot be checked, kept and counted
    out, summary = compare(tmp_path, changed, recs, items=items)
    counted = exclusions(summary)
    assert counted["trials_option_set_differs"] == 2 and counted["trials_options_not_listed"] == 1
    reference, unchanged = compare(tmp_path, trials, recs, "reference", items=items)
    assert distributions(reference)["n"].sum() - distributions(out)["n"].sum() == 2, (counted, exclusions(unchanged))


def test_items_file_formats_agree(tmp_path: Path) -> None:
    """A JSON-options CSV, a manifest.csv and a prepared datasets folder give the same distributions."""
    trials = trog_trials()
    recs = records(tmp_path / "records.csv")
    options = canonical(trials)
    as_json = write_items(options, tmp_path / "items.csv")
    manifest = tmp_path / "manifest.csv"
    pd.DataFrame({"task": "trog", "item_uid": list(options), "answer": [o[0] for o in options.values()],
                  "response_alternatives": [",".join(o[1:]) for o in options.values()]}).to_csv(manifest, index=False)
    datasets = tmp_path / "datasets"
    (datasets / "trog").mkdir(parents=True)
    pq.write_table(pa.table({"item_uid": list(options), "options": list(options.values())}),
                   datasets / "trog" / "test.parquet")
    shuffled = shuffle_distractors(trials, seed=3)
    results = [distributions(compare(tmp_path, shuffled, recs, f"out{k}", items=src)[0])
               for k, src in enumerate([as_json, manifest, datasets])]
    for other in results[1:]:
        pd.testing.assert_frame_equal(other, results[0])


def test_conflicting_duplicates_in_items_file_are_excluded(tmp_path: Path) -> None:
    trials = trog_trials()
    options = canonical(trials)
    uid = trials.loc[0, "item_uid"]
    rows = [{"item_uid": u, "options": json.dumps(o)} for u, o in options.items()]
    rows.append({"item_uid": uid, "options": json.dumps(list(reversed(options[uid])))})
    pd.DataFrame(rows).to_csv(tmp_path / "items.csv", index=False)
    out, summary = compare(tmp_path, trials, records(tmp_path / "records.csv"), items=tmp_path / "items.csv")
    assert summary["exclusions"][0]["reason"] == "items_with_conflicting_options", summary["exclusions"]
    assert exclusions(summary)["items_not_in_items_file"] == 1, summary["exclusions"]
    assert uid not in set(distributions(out)["item_uid"])


@pytest.mark.parametrize("kind", ["no_item_uid", "bad_options", "damaged_parquet"])
def test_bad_items_file_is_one_line(tmp_path: Path, kind: str) -> None:
    trials = tmp_path / "trials.csv"
    trog_trials().to_csv(trials, index=False)
    if kind == "damaged_parquet":
        items = tmp_path / "datasets" / "trog"
        items.mkdir(parents=True)
        (items / "test.parquet").write_bytes(b"PAR1 not really")
        items, needles = tmp_path / "datasets", ("datasets/trog/test.parquet: not a", "prepared dataset")
    else:
        items = tmp_path / "items.csv"
        table = {"no_item_uid": {"uid": ["x"], "options": ['["a", "b"]']},
                 "bad_options": {"item_uid": ["x"], "options": ["a;b"]}}[kind]
        needles = {"no_item_uid": ("items.csv", "lacks column item_uid"),
                   "bad_options": ("items.csv: row 1", "not a JSON list")}[kind]
        pd.DataFrame(table).to_csv(items, index=False)
    folder = irt_fixture_dir()
    done = run_cli(["compare", "--irt", str(folder / "trog_rasch_f1_scalar.rds"), "--trials", str(trials),
                    "--runs", str(folder / "runs.csv"), "--models", str(records(tmp_path / "records.csv")),
                    "--items", str(items), "--out", str(tmp_path / "out"), "--no-plots"])
    assert done.returncode == 2
    line = one_error_line(done.stderr)
    assert all(needle in line for needle in needles), line
    assert str(tmp_path) not in line
    assert not (tmp_path / "out").exists()


def test_malformed_trials_row_is_one_line_naming_the_line(tmp_path: Path) -> None:
    """The trials file is parsed by pyarrow; a row with an extra field still names the file and its line."""
    trials = tmp_path / "trials.csv"
    trog_trials().head(50).to_csv(trials, index=False)
    lines = trials.read_text().splitlines()
    lines[7] += ',"one field too many"'
    trials.write_text("\n".join(lines) + "\n")
    folder = irt_fixture_dir()
    done = run_cli(["compare", "--irt", str(folder / "trog_rasch_f1_scalar.rds"), "--trials", str(trials),
                    "--runs", str(folder / "runs.csv"), "--models", str(records(tmp_path / "records.csv")),
                    "--out", str(tmp_path / "out"), "--no-plots"])
    assert done.returncode == 2
    line = one_error_line(done.stderr)
    assert "trials.csv: malformed CSV" in line and "line 8" in line, line
    assert not (tmp_path / "out").exists()


def test_a_trials_header_after_blank_lines_is_read_and_an_unclosed_quote_in_it_is_one_line(tmp_path: Path) -> None:
    """The header is found as pyarrow finds it (empty lines before it skipped), and a header that no CSV reader can
    finish (an unclosed quote) is the file's one malformed-CSV line, however long the file."""
    from levante_tasks.compare.tables import read_columns
    from levante_tasks.errors import LevanteError

    text = trog_trials().head(50).to_csv(index=False)
    blank_first = tmp_path / "blank_first.csv"
    blank_first.write_text("\n\r\n" + text, encoding="utf-8")
    columns = ("item_uid", "response")
    read = read_columns(blank_first, "trials", columns, columns)
    assert read.astype(object).to_dict("list") == pd.read_csv(blank_first, usecols=list(columns),
                                                               dtype=str).to_dict("list")
    unclosed = tmp_path / "unclosed.csv"
    unclosed.write_text('item_uid,"response\n' + "a,b\n" * 50_000, encoding="utf-8")
    with pytest.raises(LevanteError, match=r"^unclosed\.csv: malformed CSV \("):
        read_columns(unclosed, "trials", columns, columns)
