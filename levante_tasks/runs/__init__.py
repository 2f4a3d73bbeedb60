"""Read what a run wrote, for summary, verify, rescore, compare and matrix: one reader per format, one wording.

Modules: `lmms` (lmms-eval's results JSON and samples JSON Lines: `FileProblem`, `SampleLine`), `inspect_log`
(inspect_ai `.eval` logs), `discover` (the runs under run folders and their labels), `model` (a run's model
identity and its one label), `variant_check` (a file's records against the task and seed its name says).
"""
