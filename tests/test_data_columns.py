"""`data.columns.rows_table` builds the same table as `pa.Table.from_pylist` (so the same parquet bytes), nulls,
NaN, empty lists and non-ASCII text included, without the pandas import `pa.array` makes."""

from __future__ import annotations

import io
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from levante_tasks.data.columns import rows_table
from levante_tasks.schema.items import ITEM_SCHEMA, ItemRow

SCHEMA = pa.schema([("text", pa.string()), ("count", pa.int64()), ("value", pa.float64()),
                    ("texts", pa.list_(pa.string()))])
ROWS = [
    {"text": "a", "count": 1, "value": 0.25, "texts": ["x", "yy"]},
    {"text": None, "count": None, "value": None, "texts": None},
    {"text": "", "count": -(2 ** 62), "value": math.nan, "texts": []},
    {"text": "Zoë 🦊", "count": 0, "value": 3, "texts": ["", None, "ñ"]},
    {"count": 7},  # missing keys are null
    *({"text": f"t{i}", "count": i, "value": i / 7, "texts": [str(i)] * (i % 3)} for i in range(20)),
]


def parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


@pytest.mark.parametrize("rows", [ROWS, ROWS[:1], []], ids=["mixed", "one", "empty"])
def test_rows_table_equals_from_pylist(rows):
    built, reference = rows_table(rows, SCHEMA), pa.Table.from_pylist(rows, schema=SCHEMA)
    assert built.schema == reference.schema and built.column(0).num_chunks == 1
    assert repr(built.to_pydict()) == repr(reference.to_pydict())  # `equals` is False for NaN even on itself
    assert [c.null_count for c in built.columns] == [c.null_count for c in reference.columns]
    assert parquet_bytes(built) == parquet_bytes(reference)


def test_item_rows_give_the_same_parquet_bytes():
    items = [ItemRow(item_uid=f"u{i}", source_item_uid=f"u{i}", task="vocab", task_id="vocab", trial_type="t",
                     options=["a", "b"], option_images=["release/visual/vocab/a.png", ""], chance_level=0.5,
                     n_options=2, manifest_row=i).as_dict() for i in range(5)]
    assert parquet_bytes(rows_table(items, ITEM_SCHEMA)) == parquet_bytes(pa.Table.from_pylist(items,
                                                                                               schema=ITEM_SCHEMA))


def test_a_type_without_a_builder_is_refused():
    with pytest.raises(TypeError, match="no column builder for Arrow type bool"):
        rows_table([{"flag": True}], pa.schema([("flag", pa.bool_())]))
