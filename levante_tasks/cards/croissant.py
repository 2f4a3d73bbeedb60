"""Croissant 1.1 JSON-LD building blocks and the one card check that every card of the package goes through.

A card lists its files as FileObjects whose `contentUrl` is a path relative to a root folder (the card's own folder
unless the checker is told otherwise), each with its sha256. `check_card` passes a card only when mlcroissant 1.1.1
(the optional `croissant` extra) finds no error and no warning in its metadata, every file's bytes still hash to the
card's sha256, every column of a parquet file a record set reads is declared as a field, and mlcroissant generates
the records of every record set from those files with each declared key unique. A failure is one line naming the
file (the changed data file, or the card).
"""

from __future__ import annotations

import json
import logging
import mimetypes
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from levante_tasks.atomic import write_json
from levante_tasks.errors import LevanteError, display_path, problem_text, shown_paths
from levante_tasks.filehash import sha256_file

CROISSANT_1_1 = "http://mlcommons.org/croissant/1.1"
CC_BY_NC_4_0 = "https://creativecommons.org/licenses/by-nc/4.0/"  # LEVANTE's task content
MIT = "https://opensource.org/license/mit"  # levante-tasks' own code
INSTALL_HINT = "card checks need mlcroissant: pip install 'levante-tasks[croissant]'"

# The JSON-LD context of a Croissant 1.1 card (the spec's 1.0 terms plus the 1.1 ones: isArray, arrayShape,
# containedIn); `rai:` holds the Responsible-AI fields.
CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "sc": "https://schema.org/",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "dct": "http://purl.org/dc/terms/",
    "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "containedIn": "cr:containedIn",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileObject": "cr:fileObject",
    "fileProperty": "cr:fileProperty",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

_FORMATS = {".parquet": "application/x-parquet", ".csv": "text/csv", ".json": "application/json",
            ".jsonl": "application/jsonl", ".webp": "image/webp", ".rds": "application/octet-stream"}
# Croissant data types of the value kinds a record set's columns hold.
TEXT, INTEGER, FLOAT, BOOLEAN = "sc:Text", "sc:Integer", "sc:Float", "sc:Boolean"


class CardError(LevanteError):
    """A card failed its check: one line naming the file (a changed data file, or the card itself)."""


def encoding_format(relpath: str) -> str:
    """The MIME type a FileObject declares for `relpath`, from its suffix."""
    suffix = PurePosixPath(relpath).suffix.lower()
    return _FORMATS.get(suffix) or mimetypes.guess_type(relpath)[0] or "application/octet-stream"


def file_id(relpath: str) -> str:
    """The @id of the FileObject of `relpath`: the path, each whitespace an underscore (mlcroissant refuses an @id
    with whitespace, escaped or not; LEVANTE's pictures have names such as `rubber band.webp`)."""
    return re.sub(r"\s", "_", relpath)


def file_object(relpath: str, sha256: str, description: str = "") -> dict[str, Any]:
    """A FileObject for the file at `relpath` (its contentUrl; its @id: `file_id`) whose bytes hash to `sha256`."""
    node = {"@type": "cr:FileObject", "@id": file_id(relpath), "name": file_id(relpath), "contentUrl": relpath,
            "encodingFormat": encoding_format(relpath), "sha256": sha256}
    return {**node, "description": description} if description else node


def local_file_object(root: Path, relpath: str, description: str = "") -> dict[str, Any]:
    """A FileObject for `root/relpath`, hashed now (for files no lock records)."""
    return file_object(relpath, sha256_file(root / relpath), description)


def field(record_set_id: str, column: str, data_type: str, source_id: str, description: str = "",
          is_array: bool = False) -> dict[str, Any]:
    """A Field `<record_set_id>/<column>` read from `column` of the FileObject whose @id is `source_id`
    (`is_array`: a list column)."""
    node: dict[str, Any] = {"@type": "cr:Field", "@id": f"{record_set_id}/{column}", "name": column,
                            "dataType": data_type,
                            "source": {"fileObject": {"@id": source_id}, "extract": {"column": column}}}
    if description:
        node["description"] = description
    if is_array:
        node["isArray"] = True
        node["arrayShape"] = "-1"
    return node


def record_set(record_set_id: str, fields: Sequence[dict[str, Any]], key: Sequence[str],
               description: str = "") -> dict[str, Any]:
    """A RecordSet of `fields` whose records are identified by the columns `key` (each one of its fields)."""
    names = {node["name"] for node in fields}
    missing = [column for column in key if column not in names]
    if missing:
        raise ValueError(f"record set {record_set_id}: key column {missing[0]} is not one of its fields")
    node: dict[str, Any] = {"@type": "cr:RecordSet", "@id": record_set_id, "name": record_set_id,
                            "key": [{"@id": f"{record_set_id}/{column}"} for column in key], "field": list(fields)}
    if description:
        node["description"] = description
    return node


def _unique_file_ids(distribution: Sequence[dict[str, Any]]) -> None:
    """Two files whose paths differ only in whitespace against underscores would share an @id: refused."""
    seen: dict[str, str] = {}
    for node in distribution:
        other = seen.setdefault(node["@id"], node.get("contentUrl", ""))
        if other != node.get("contentUrl", ""):
            raise LevanteError(f"{node.get('contentUrl')}: its card @id {node['@id']} is also that of {other}")


def dataset(name: str, description: str, licenses: Sequence[str], distribution: Sequence[dict[str, Any]],
            record_sets: Sequence[dict[str, Any]], **properties: Any) -> dict[str, Any]:
    """The card: a Croissant 1.1 sc:Dataset with its files, record sets and any further (schema.org or `rai:`)
    properties, e.g. url, version, citeAs, datePublished, inLanguage, rai:dataCollection."""
    _unique_file_ids(distribution)
    return {"@context": CONTEXT, "@type": "sc:Dataset", "conformsTo": CROISSANT_1_1, "name": name,
            "description": description, "license": list(licenses), **properties,
            "distribution": list(distribution), "recordSet": list(record_sets)}


def write_card(path: Path, card: Mapping[str, Any]) -> None:
    """Write the card atomically (a reader never sees half a card)."""
    write_json(path, card)


@dataclass(frozen=True)
class CardCheck:
    """What a passing check saw: the files whose sha256 it confirmed and the records per record set."""

    files: int
    records: dict[str, int]


def _is_file_object(node: Mapping[str, Any]) -> bool:
    """Whether a distribution node is a FileObject however its @type is spelled (`cr:FileObject`, the full IRI, a
    list holding one): a spelling the hash check missed would let a wrong sha256 through."""
    types = node.get("@type")
    return any(re.split(r"[:/#]", str(kind))[-1] == "FileObject"
               for kind in (types if isinstance(types, list) else [types]))


def _card_files(card: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The card's FileObjects."""
    for node in card.get("distribution") or []:
        if isinstance(node, dict) and _is_file_object(node):
            yield node


def _local_path(root: Path, url: str, shown: str) -> Path | None:
    """`root/url` for a relative contentUrl inside `root`; None for a web URL."""
    if "://" in url:
        return None
    rel = PurePosixPath(url)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise CardError(f"{shown}: contentUrl {url!r} is not a path inside the card's folder")
    return root.joinpath(*rel.parts)


def _check_hashes(card: Mapping[str, Any], root: Path, shown: str) -> dict[str, Path]:
    """The local files of the card (FileObject @id -> path), each confirmed against its sha256 (a FileSet's files
    are not: Croissant gives a FileSet no checksum)."""
    paths = {}
    for node in _card_files(card):
        url = str(node.get("contentUrl") or "")
        path = _local_path(root, url, shown)
        if path is None:
            continue
        if not path.is_file():
            raise CardError(f"{url}: missing (listed in {shown})")
        if not node.get("sha256"):
            raise CardError(f"{url}: no sha256 in {shown}")
        if node["sha256"] != sha256_file(path):
            raise CardError(f"{url}: sha256 differs from {shown} (the file changed after the card was written)")
        paths[str(node.get("@id"))] = path
    return paths


class _Collected(logging.Handler):
    """Keeps the warnings mlcroissant logs (through absl) instead of printing them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def _mlcroissant_log() -> Iterator[_Collected]:
    """The warnings mlcroissant logs meanwhile (some, such as a non-standard @context, are only logged), its
    libraries' Python deprecation warnings hushed."""
    logger = logging.getLogger("absl")
    collected, propagate = _Collected(), logger.propagate
    logger.addHandler(collected)
    logger.propagate = False
    try:
        with warnings.catch_warnings():  # deprecation notices of its libraries (rdflib, pandas)
            warnings.simplefilter("ignore", DeprecationWarning)
            yield collected
    finally:
        logger.removeHandler(collected)
        logger.propagate = propagate


def _first(issues: Iterable[str]) -> str:
    """The first of mlcroissant's issues (sorted, so the same card always shows the same one) on one line."""
    return " ".join(sorted(issues)[0].split())


def _check_columns(card: Mapping[str, Any], paths: Mapping[str, Path], shown: str) -> None:
    """Every column of a parquet file that a record set reads is some record set's field: a card that declares only
    some of a file's columns (one option picture of four, say) passes mlcroissant and would describe less than the
    file holds."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    read: dict[str, set[str]] = {}
    for set_node in card.get("recordSet") or []:
        for node in set_node.get("field") or []:
            source = node.get("source") or {}
            file_ref = (source.get("fileObject") or {}).get("@id")
            column = (source.get("extract") or {}).get("column")
            if file_ref and column:
                read.setdefault(str(file_ref), set()).add(str(column))
    for file_ref, columns in sorted(read.items()):
        path = paths.get(file_ref)
        if path is None or path.suffix.lower() != ".parquet":
            continue
        url = next(str(n.get("contentUrl")) for n in _card_files(card) if str(n.get("@id")) == file_ref)
        try:
            names = pq.read_schema(path).names
        except (OSError, pa.ArrowInvalid) as exc:
            raise CardError(f"{url}: not a readable parquet file ({exc.__class__.__name__})") from None
        undeclared = [name for name in names if name not in columns]
        if undeclared:
            raise CardError(f"{url}: column {undeclared[0]} is no record set's field in {shown}")


def _record_file(card: Mapping[str, Any], record_set_node: Mapping[str, Any]) -> str | None:
    """The contentUrl of the file a record set's first field reads from (named when one of its keys repeats)."""
    urls = {node.get("@id"): node.get("contentUrl") for node in card.get("distribution") or []}
    for node in record_set_node.get("field") or []:
        source = node.get("source") or {}
        file_ref = source.get("fileObject") or source.get("fileSet") or {}
        if file_ref.get("@id"):
            return str(urls.get(file_ref["@id"]) or file_ref["@id"])
    return None


def _key_text(record: Mapping[str, Any], key_ids: Sequence[str]) -> tuple[Any, ...]:
    """A record's key values (mlcroissant yields text as bytes)."""
    values = []
    for key_id in key_ids:
        value = record[key_id]
        values.append(value.decode("utf-8", "replace") if isinstance(value, bytes) else value)
    return tuple(values)


def _check_records(dataset_: Any, card: Mapping[str, Any], shown: str) -> dict[str, int]:
    """Generate every record set's records; each declared key must be unique within its record set."""
    counts = {}
    for node in card.get("recordSet") or []:
        set_id = str(node["@id"])
        key_ids = [str(ref["@id"]) for ref in node.get("key") or []]
        seen: set[tuple[Any, ...]] = set()
        count = 0
        try:
            for record in dataset_.records(record_set=set_id):
                count += 1
                if not key_ids:
                    continue
                key = _key_text(record, key_ids)
                if key in seen:
                    where = _record_file(card, node) or shown
                    shown_key = ", ".join(str(value) for value in key)
                    raise CardError(f"{where}: key ({shown_key}) repeats in record set {set_id} of {shown}")
                seen.add(key)
        except CardError:
            raise
        except Exception as exc:  # mlcroissant raises many kinds while reading files: one line naming the set
            where = _record_file(card, node) or shown
            raise CardError(f"{where}: no records for record set {set_id} of {shown}: "
                            f"{shown_paths(' '.join(str(exc).split()))[:300]}") from exc
        counts[set_id] = count
    return counts


def read_card(path: Path) -> dict[str, Any]:
    """The card's JSON object; one line naming the file when it is unreadable or not a JSON object."""
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CardError(f"{display_path(path)}: {problem_text(exc)}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CardError(f"{display_path(path)}: not a JSON card ({exc.__class__.__name__})") from None
    if not isinstance(card, dict):
        raise CardError(f"{display_path(path)}: not a JSON object")
    return card


def check_card(path: Path, root: Path | None = None) -> CardCheck:
    """Check the card at `path` whose contentUrls are relative to `root` (default: the card's folder): metadata
    without errors or warnings (mlcroissant), every file's sha256, and every record set's records generated from
    the files with unique keys. Raises CardError (one line naming the file) on the first failure."""
    shown = path.name
    card = read_card(path)
    paths = _check_hashes(card, root or path.parent, shown)
    try:
        import mlcroissant as mlc
    except ImportError:
        raise CardError(f"{shown}: {INSTALL_HINT}") from None
    ctx = mlc.Context(mapping=paths)
    dataset_: Any = None
    with _mlcroissant_log() as logged:
        try:
            dataset_ = mlc.Dataset.from_metadata(mlc.Metadata.from_json(ctx=ctx, json_=card))
        except mlc.ValidationError:
            pass  # its issues are read below
    if ctx.issues.errors:
        raise CardError(f"{shown}: not valid Croissant: {shown_paths(_first(ctx.issues.errors))}")
    warned = ctx.issues.warnings or logged.messages
    if warned:
        raise CardError(f"{shown}: Croissant warning: {shown_paths(_first(warned))}")
    _check_columns(card, paths, shown)
    with _mlcroissant_log():
        return CardCheck(files=len(paths), records=_check_records(dataset_, card, shown))
