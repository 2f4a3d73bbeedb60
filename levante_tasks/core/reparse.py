"""Re-parse a saved response against its per-item record: the one rule `rescore` writes and `verify` checks.

The record carries every parser input but the response (schema.records): the presented order (so the letters
and the canonical index), the option texts as shown and, for sliders, the number line's range and target. A
generate_until response is the generated text; a multiple_choice response is the per-option `(loss, greedy)`
pairs as saved. A translated item's locale is the one its recorded `parser_version` names (`3+de.1`: the German
forms are read too). The new record is built by the same functions the tasks use (`core.records`). Only what the
parser decides (`DECIDED`) is compared: a key added to records since (`chance_level`, say) is no disagreement, and
a record whose decisions stand is kept as saved, byte for byte.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from levante_tasks.core import parsing, records
from levante_tasks.core.locale_text import item_locale
from levante_tasks.schema.items import letters_for
from levante_tasks.schema.locales import Locale, LocaleError

IDENTITY = ("item_uid", "task", "trial_type", "seed", "variant", "presented_order")
# what the parser decides of a response: the answer, its form and confidence, the slider value, correctness
DECIDED = ("choice_letter", "choice_index", "parse_method", "parse_confidence", "response_position",
           "response_value", "correct")


class NotReparsable(ValueError):
    """A record without the parser inputs (written before parser version 2) or a response of the wrong shape."""


def record_doc(record: Mapping[str, Any]) -> dict[str, Any]:
    """The doc fields `core.records` needs, rebuilt from a record (its recorded presented order included)."""
    if "parser_version" not in record or "option_texts" not in record:
        raise NotReparsable("the record names no parser_version (written before parser version 2 recorded the "
                            "parser's inputs)")
    try:
        doc = {key: record[key] for key in IDENTITY}
        grammar = parsing.version_locale(str(record["parser_version"]))
        if not grammar.is_source:
            doc["locale"] = grammar.code
        slider = "target_value" in record
        doc["letters"] = [] if slider else letters_for(len(doc["presented_order"]))
        if slider:
            doc.update(range_min=record["range_min"], range_max=record["range_max"], answer=record["target_value"])
    except LocaleError as exc:
        raise NotReparsable(f"the record's parser_version names no known locale ({exc})") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise NotReparsable(f"the record is incomplete ({type(exc).__name__}: {exc})") from None
    return doc


def reparse(record: Mapping[str, Any], response: Any) -> dict[str, Any]:
    """The record today's parser makes of `response` for the item of `record`; NotReparsable if it cannot."""
    doc = record_doc(record)
    if record.get("output_type") == "multiple_choice":
        if not isinstance(response, Sequence) or isinstance(response, str) or len(response) != len(doc["letters"]):
            raise NotReparsable("the response is not one (loss, greedy) pair per option")
        try:
            return records.loss_record(doc, [records.option_loss(r) for r in response])
        except (ValueError, TypeError, SyntaxError):
            raise NotReparsable("the response holds a loss that is not a number") from None
    text = response[0] if isinstance(response, list) and len(response) == 1 else response
    if not isinstance(text, str):
        raise NotReparsable("the response is not a generated text")
    if "target_value" in record:
        return records.slider_record(doc, *parsing.parse_number(text))
    options = list(record["option_texts"])
    if all(isinstance(option, str) for option in options):
        parsed = _parse_choice(text, tuple(doc["letters"]), tuple(options), item_locale(doc))
    else:  # a hand-edited record's option texts (a list, a number: 1 and 1.0 would be one memo key) unmemoized
        parsed = parsing.parse_choice(text, doc["letters"], options, item_locale(doc))
    return records.choice_record(doc, parsed, option_texts=options)


@functools.lru_cache(maxsize=4096)
def _parse_choice(text: str, letters: tuple[str, ...], options: tuple[Any, ...],
                  locale: Locale) -> parsing.Parsed:
    """`parsing.parse_choice`, once per distinct (response, letters, options, locale): `verify` re-parses every
    record of every run, and lone-letter answers repeat across items, seeds and models (Parsed is frozen)."""
    return parsing.parse_choice(text, letters, options, locale)


def answer_of(record: Mapping[str, Any]) -> Any:
    """What a record says was answered: the letter as presented, or a slider's position (None when unparsed)."""
    return record.get("response_position") if "target_value" in record else record.get("choice_letter")


def decided_changes(record: Mapping[str, Any], fresh: Mapping[str, Any]) -> list[str]:
    """The `DECIDED` keys on which a saved record and its re-parse differ (empty: the saved record stands)."""
    return [key for key in DECIDED if record.get(key) != fresh.get(key)]


def _shown(record: Mapping[str, Any]) -> str:
    return f"{answer_of(record)!r} by {record.get('parse_method')}, correct {record.get('correct')}"


def disagreement(record: Mapping[str, Any], response: Any) -> str | None:
    """Why a saved record is not what its response re-parses to (None when it is); NotReparsable if it cannot
    be re-parsed."""
    fresh = reparse(record, response)
    differs = decided_changes(record, fresh)
    if not differs:
        return None
    if record.get("parser_version") != fresh["parser_version"]:
        return (f"recorded by parser version {record.get('parser_version')} as {_shown(record)}; parser version "
                f"{fresh['parser_version']} reads its response as {_shown(fresh)} (levante-tasks rescore)")
    return f"record says {_shown(record)}, its response re-parses to {_shown(fresh)} ({', '.join(differs)} differ)"


def not_reparsable_lines(where: str, failures: list[tuple[str, str]]) -> list[str]:
    """One line per reason of `(position, reason)` failures: `<where>: N record(s) cannot be re-parsed (first:
    <position>): <reason>` (an old run is one line per task, not one per record)."""
    by_reason: dict[str, list[str]] = {}
    for position, reason in failures:
        by_reason.setdefault(reason, []).append(position)
    return [f"{where}: {len(positions)} record(s) cannot be re-parsed (first: {positions[0]}): {reason}"
            for reason, positions in by_reason.items()]
