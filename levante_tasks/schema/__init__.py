"""The contracts between the data layer, the task layer and the comparison (docs/design.md points here).

`tasks`: the task catalogue (one row per LEVANTE task). `items`: the item row of a prepared dataset (the parquet
schema is derived from it), the option letters and the slider tolerance. `records`: the per-item record the task
layer writes and the comparison reads. `layout`: where prepared data lives and which version a run evaluates.
"""
