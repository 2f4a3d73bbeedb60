"""Read the user's input files so that every problem is one line naming the file (and its line or row).

Text is checked before pandas sees it (UTF-8; a leading BOM is accepted; a NUL byte is refused, since pandas
would silently drop it); then empty files, malformed rows and text in numeric columns are user errors
naming the file, never tracebacks. Rows are data rows counted from 1 after the header.
"""

from __future__ import annotations

import codecs
import csv
import math
from pathlib import Path

import numpy as np
import pandas as pd

from levante_tasks.errors import LevanteError, display_path, os_error
from levante_tasks.textfile import NUL, line_of, not_utf8, nul_byte

CHUNK = 1 << 20
TRUE_STRINGS = {"true", "t", "1", "1.0", "yes"}
FALSE_STRINGS = {"false", "f", "0", "0.0", "no"}


def check_text(path: Path) -> None:
    """Fail with `<file>:<line>: ...` at the first NUL byte or non-UTF-8 byte (read in chunks, any size).

    An ASCII chunk (most input) needs no decoding; lines are counted only to name a bad byte's line."""
    carry, base = b"", 0  # base: the file offset of data[0]
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(CHUNK)
            data = carry + chunk
            nul = data.find(NUL)
            if nul >= 0:
                raise LevanteError(f"{path.name}:{_line_at(path, base + nul)}: {nul_byte()}")
            used = len(data)
            if not data.isascii():
                try:
                    _, used = codecs.utf_8_decode(data, "strict", not chunk)
                except UnicodeDecodeError as exc:
                    where = _line_at(path, base + exc.start)
                    raise LevanteError(f"{path.name}:{where}: {not_utf8(data, exc.start, base)}") from None
            carry, base = data[used:], base + used
            if not chunk:
                return


def _line_at(path: Path, offset: int) -> int:
    """The 1-based line number of byte `offset` of a file (read again in chunks: only for an error message)."""
    line = 1
    with open(path, "rb") as handle:
        while offset > 0:
            chunk = handle.read(min(CHUNK, offset))
            if not chunk:
                break
            line, offset = line_of(chunk, len(chunk), line), offset - len(chunk)
    return line


def _first_line(exc: Exception) -> str:
    """The first non-empty line of an exception message (pandas messages may span lines)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _require_file(path: Path, what: str) -> None:
    """A missing input, or a folder where a CSV file is expected, is one line naming it."""
    if not path.exists():
        raise LevanteError(f"{display_path(path)}: {what} file not found")
    if path.is_dir():
        raise LevanteError(f"{display_path(path)}: is a folder, expected a {what} CSV file")


def read_table(path: Path, what: str, dtype: dict[str, type] | None = None) -> pd.DataFrame:
    """A CSV file as a DataFrame; missing, unreadable, empty, non-UTF-8 or malformed files are user errors."""
    _require_file(path, what)
    try:
        check_text(path)
        return pd.read_csv(path, dtype=dtype, encoding="utf-8-sig")
    except OSError as exc:
        raise os_error(exc, f"reading the {what} file") from None
    except pd.errors.EmptyDataError:
        raise LevanteError(f"{path.name}: empty file (no header line)") from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise LevanteError(f"{path.name}: malformed CSV ({_first_line(exc)})") from None


def read_columns(path: Path, what: str, wanted: tuple[str, ...], required: tuple[str, ...]) -> pd.DataFrame:
    """The `wanted` columns present in a (large) CSV as pandas categoricals, read by pyarrow's parser.

    Every value is text (a category); empty cells and NA-like strings are missing. Large trials files are read
    in a fraction of pandas' time and memory this way; problems are the same one-line errors as `read_table`'s
    (a malformed file is re-read by pandas only to name the offending line). One thread: with quoted values
    that may hold newlines the parse is mostly serial, and pyarrow's threads added ~0.3 s of CPU to a 1M-trial
    file (0.55 s alone) for no shorter wall time on 2 cores. The header is read first by Python's csv module (one
    plain read of the first record), so pyarrow opens the file once: no reader of an earlier open is left to read
    ahead on a descriptor number that the table's open then reuses.
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv

    _require_file(path, what)
    try:
        check_text(path)
        with open(path, "rb") as handle:
            head = handle.read(CHUNK)
        if not head.removeprefix(codecs.BOM_UTF8).strip():
            raise LevanteError(f"{path.name}: empty file (no header line)")
        names = _header(path)
        missing = [c for c in required if c not in names]
        if missing:
            raise LevanteError(f"{path.name}: {what} table lacks columns {missing}")
        columns = [c for c in wanted if c in names]
        with pa.OSFile(str(path)) as source:  # read, not memory-mapped: the file's pages are not held resident
            table = pcsv.read_csv(
                source,
                read_options=pcsv.ReadOptions(use_threads=False),
                parse_options=pcsv.ParseOptions(newlines_in_values=True),
                convert_options=pcsv.ConvertOptions(
                    include_columns=columns,
                    column_types={c: pa.dictionary(pa.int32(), pa.string()) for c in columns},
                    strings_can_be_null=True,
                ),
            )
    except OSError as exc:
        raise os_error(exc, f"reading the {what} file") from None
    except pa.ArrowKeyError as exc:  # a column of the header read first is not in the table's: the file changed
        raise LevanteError(f"{path.name}: changed while it was read ({_first_line(exc)})") from None
    except (pa.ArrowInvalid, csv.Error) as exc:
        read_table(path, what)  # pandas names the malformed line; reached only when it does not complain
        raise LevanteError(f"{path.name}: malformed CSV ({_first_line(exc)})") from None
    return pd.DataFrame({name: table[name].to_pandas() for name in columns})


def _header(path: Path) -> list[str]:
    """The column names of a CSV file's first non-empty record (a leading BOM dropped), as pyarrow's parser reads
    them (it skips empty lines); csv.Error for a record it cannot read (an unclosed quote)."""
    with open(path, encoding="utf-8-sig", newline="") as handle:
        return next((row for row in csv.reader(handle) if row), [])


def positions(column: pd.Series, index: pd.Index) -> np.ndarray:
    """`index.get_indexer` of a column's values (-1 = absent or missing), per category for categoricals."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        per_category = np.append(index.get_indexer(column.cat.categories.astype(object)), -1)
        return per_category[column.cat.codes.to_numpy()]
    return index.get_indexer(column.astype(object))


def rows_with_items(trials: pd.DataFrame, uids: set[str] | dict) -> np.ndarray:
    """Mask of trials whose item_uid is one of `uids`."""
    return positions(trials["item_uid"], pd.Index(list(uids), dtype=object)) >= 0


def _cell(value: object) -> str:
    """A cell value for a message, shortened."""
    text = str(value)
    return repr(text if len(text) <= 40 else text[:37] + "...")


def numeric(table: pd.DataFrame, column: str, path: Path, key: str | None = None) -> pd.Series:
    """`column` as floats: empty/NA cells stay NaN, any other text is an error naming the row and value."""
    values = pd.to_numeric(table[column], errors="coerce")
    bad = values.isna() & table[column].notna()
    if bad.any():
        pos = int(bad.to_numpy().nonzero()[0][0])
        label = f" ({key} {table[key].iloc[pos]})" if key and key in table.columns else ""
        raise LevanteError(
            f"{path.name}: row {pos + 1}{label}: column {column} is not a number ({_cell(table[column].iloc[pos])})"
        )
    return values.astype(float)


def parse_correct(value: object) -> float:
    """1.0 / 0.0 from a bool, 0/1 number or true/false-like string; NaN when empty; ValueError otherwise."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return math.nan
    if isinstance(value, bool):
        return float(value)
    text = str(value).strip().lower()
    if text in TRUE_STRINGS:
        return 1.0
    if text in FALSE_STRINGS:
        return 0.0
    if text in ("", "na", "nan", "none", "null"):
        return math.nan
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"correct is not 0/1 or true/false ({_cell(value)})") from None
    if number not in (0.0, 1.0):
        raise ValueError(f"correct must be 0 or 1, not {_cell(value)}")
    return number
