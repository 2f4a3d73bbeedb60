"""`python -m levante_tasks.testing.forked_lmms_eval ARGS`: `python -m lmms_eval ARGS` without its start-up, for the
matrix runner's tests of lmms-eval's own classes (config key `lmms_eval_module`): run in a fork of a zygote through
the test process's dispatcher (`fork_stream`), or exec'd as that command where there is none."""

import sys

from levante_tasks.testing import fork_stream

if __name__ == "__main__":
    fork_stream.run("lmms_eval", sys.argv[1:])
