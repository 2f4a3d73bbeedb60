"""verify's memos give what the code they spare gives: a record that agreed once does not hide a twin that differs
in any input of the re-parse, in a value's type, or in a key the re-parse needs (summary.verify._Agreements,
_wanted)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from levante_tasks.core.parsing import PARSER_VERSION
from levante_tasks.core.reparse import NotReparsable, disagreement, reparse
from levante_tasks.summary import verify


def _record(response: Any = "B") -> dict[str, Any]:
    """A generate_until choice record (option 0 shown second) that agrees with `response`: its re-parse."""
    shown = {"output_type": "generate_until", "item_uid": "vocab_1", "task": "vocab", "trial_type": "test", "seed": 0,
             "variant": "original", "presented_order": [1, 0, 2, 3], "parser_version": PARSER_VERSION,
             "option_texts": []}
    return reparse(shown, response)


def _edited(record: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of `record` with `changes` (KeyError: the key removed)."""
    record = copy.deepcopy(record)
    for key, value in changes.items():
        if value is KeyError:
            del record[key]
        else:
            record[key] = value
    return record


TWINS = [  # changes to an agreeing record
    {"choice_letter": "C"}, {"correct": True}, {"correct": 1.0}, {"parse_confidence": -0.0},
    {"parse_confidence": 0.5}, {"item_uid": KeyError}, {"seed": "0"}, {"seed": "x"}, {"seed": True},
    {"presented_order": [1.0, 0.0, 2.0, 3.0]}, {"presented_order": [0, 1, 2, 3]},
    {"option_texts": ["1", "0", "x", "y"]}, {"option_texts": [1, 0, 2, 3]}, {"parser_version": "1"},
    {"parser_version": KeyError}, {"option_texts": KeyError}, {"output_type": "multiple_choice"},
    {"response_position": 0.5}, {"choice_index": [0]}, {"task": "trog"}, {"trial_type": KeyError},
]


def _outcome(check: Any, record: dict[str, Any], response: Any) -> tuple[str, Any]:
    try:
        return "returned", check(record, response)
    except Exception as exc:  # noqa: BLE001 (the memo must raise what the plain call raises)
        return "raised", (type(exc), str(exc))


def test_a_multiple_choice_record_is_never_keyed_by_a_text() -> None:
    """A multiple_choice response is one (loss, greedy) pair per option: `["1.5"]` re-parses (one option) where
    `"1.5"` cannot, so the text they share must not let one pass for the other (line memo and re-parse memo)."""
    shown = {"output_type": "multiple_choice", "item_uid": "vocab_1", "task": "vocab", "trial_type": "test", "seed": 0,
             "variant": "original", "presented_order": [0], "parser_version": PARSER_VERSION, "option_texts": []}
    record = reparse(shown, ["1.5"])
    agreements = verify._Agreements()
    line = {"doc_id": 0, "target": 0, "filtered_resps": ["1.5"], "levante_acc": float(record["correct"]),
            "levante_parse_rate": float(record["parse_method"] != "none"), "levante_item": record}
    assert _outcome(lambda t, _: agreements.check_line(t), line, None) == \
        _outcome(lambda t, _: _plain_line_check(t), line, None)
    twin = {**line, "filtered_resps": "1.5"}
    assert _outcome(lambda t, _: agreements.check_line(t), twin, None) == \
        _outcome(lambda t, _: _plain_line_check(t), twin, None) == \
        ("raised", (NotReparsable, "the response is not one (loss, greedy) pair per option"))
    assert _outcome(agreements.disagreement, record, "1.5") == _outcome(disagreement, record, "1.5")


@pytest.mark.parametrize("changes", TWINS, ids=range(len(TWINS)))
@pytest.mark.parametrize("response", ["B", ["B"], "The answer is B."])
def test_an_agreed_record_does_not_hide_its_twin(changes: dict[str, Any], response: Any) -> None:
    agreements, record = verify._Agreements(), _record(response)
    assert agreements.disagreement(record, response) is None
    assert agreements.agreed  # remembered
    twin = _edited(record, changes)
    assert _outcome(agreements.disagreement, twin, response) == _outcome(disagreement, twin, response)


def test_the_memo_is_used_and_bounded() -> None:
    agreements = verify._Agreements(limit=2)
    for response in ("B", "b", "B.", "(B)"):
        assert agreements.disagreement(_record(response), response) is None
    assert 1 <= len(agreements.agreed) <= 2


@pytest.mark.parametrize("changes", TWINS, ids=range(len(TWINS)))
def test_line_values_memo_gives_what_the_record_gives(changes: dict[str, Any]) -> None:
    verify._wanted(_record())  # remembered
    twin = _edited(_record(), changes)
    assert _outcome(lambda r, _: verify._wanted(r), twin, None) == \
        _outcome(lambda r, _: verify._record_values(r), twin, None)


def _line(response: Any = "B") -> dict[str, Any]:
    """A samples line as lmms-eval writes it for `_record(response)`: its metrics, target and response."""
    record = _record(response)
    return {"doc_id": 0, "target": "B", "filtered_resps": response, "levante_acc": float(record["correct"]),
            "levante_parse_rate": 1.0, "levante_item": record}


LINE_TWINS = [  # changes to an agreeing line (RECORD_KEY: changes to its record)
    {"levante_acc": 0.0}, {"levante_acc": 1}, {"levante_acc": True}, {"levante_acc": KeyError}, {"levante_acc": [1.0]},
    {"levante_parse_rate": 0.0}, {"levante_acc_counting": 1.0}, {"target": "A"}, {"target": KeyError},
    {"target": 1}, {"filtered_resps": "C"}, {"filtered_resps": ["B"]}, {"doc_id": 7},
    *({"levante_item": changes} for changes in TWINS),
]


def _plain_line_check(line: dict[str, Any]) -> str | None:
    """What `_Agreements.check_line` gives without its memos."""
    record = line.get("levante_item")
    problem = verify._record_disagreement(line) or verify._order_disagreement(line)
    return disagreement(record, line.get("filtered_resps")) if problem is None and isinstance(record, dict) \
        else problem


@pytest.mark.parametrize("changes", LINE_TWINS, ids=range(len(LINE_TWINS)))
def test_an_agreed_line_does_not_hide_its_twin(changes: dict[str, Any]) -> None:
    """A line every check passed is remembered: a twin differing in any value a check reads (or its type, or a key
    present or not) is checked, and gives what the checks give without memos."""
    agreements, line = verify._Agreements(), _line()
    assert agreements.check_line(line) is None
    assert agreements.lines  # remembered
    twin = copy.deepcopy(line)
    for key, value in changes.items():
        if key == "levante_item":
            twin[key] = _edited(twin[key], value)
        elif value is KeyError:
            del twin[key]
        else:
            twin[key] = value
    assert _outcome(lambda t, _: agreements.check_line(t), twin, None) == \
        _outcome(lambda t, _: _plain_line_check(t), twin, None)
    if changes in ({"doc_id": 7}, {"levante_item": {"item_uid": "vocab_2"}}):
        assert agreements.check_line(twin) is None
