"""An Arrow table of item rows assembled from column buffers: `pa.array` and `Table.from_pylist` import pandas
(~0.3 s of a first `prepare`) only to ask whether their input is a pandas object; these columns never are.

Covers the column types of `schema.items.ITEM_SCHEMA` (string, int64, float64, list of strings); None is null. The
table equals `pa.Table.from_pylist(rows, schema=schema)` (tested), so the parquet bytes are the same.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

_NUMBERS = {pa.int64(): "q", pa.float64(): "d"}  # Arrow type -> `array` typecode of the same width


def _validity(values: Sequence[Any]) -> pa.Buffer | None:
    """The validity bitmap of `values` (bit i set: values[i] is not None); None when nothing is null."""
    if all(value is not None for value in values):
        return None
    bits = bytearray((len(values) + 7) // 8)
    for index, value in enumerate(values):
        if value is not None:
            bits[index >> 3] |= 1 << (index & 7)
    return pa.py_buffer(bits)


def _offsets(lengths: Sequence[int]) -> pa.Buffer:
    """32-bit offsets 0, l0, l0 + l1, ... (Arrow's `string` and `list` layout)."""
    offsets = array("i", [0])
    total = 0
    for length in lengths:
        total += length
        offsets.append(total)
    return pa.py_buffer(offsets)


def _strings(values: Sequence[str | None]) -> pa.Array:
    encoded = [b"" if value is None else value.encode("utf-8") for value in values]
    buffers = [_validity(values), _offsets([len(e) for e in encoded]), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.string(), len(values), buffers)


def _string_lists(values: Sequence[Sequence[str | None] | None]) -> pa.Array:
    lists = [() if value is None else value for value in values]
    child = _strings([text for texts in lists for text in texts])
    return pa.Array.from_buffers(pa.list_(pa.string()), len(values),
                                 [_validity(values), _offsets([len(texts) for texts in lists])], children=[child])


def _numbers(values: Sequence[float | int | None], kind: pa.DataType) -> pa.Array:
    data = array(_NUMBERS[kind], [0 if value is None else value for value in values])
    return pa.Array.from_buffers(kind, len(values), [_validity(values), pa.py_buffer(data)])


def _column(values: list[Any], kind: pa.DataType) -> pa.Array:
    if kind == pa.string():
        return _strings(values)
    if kind == pa.list_(pa.string()):
        return _string_lists(values)
    if kind in _NUMBERS:
        return _numbers(values, kind)
    raise TypeError(f"no column builder for Arrow type {kind}")


def rows_table(rows: Sequence[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """The rows (dicts; a missing key is null) as a table of `schema`, one chunk per column."""
    columns = [_column([row.get(name) for row in rows], schema.field(name).type) for name in schema.names]
    for column in columns:
        column.validate(full=True)
    return pa.Table.from_arrays(columns, schema=schema)
