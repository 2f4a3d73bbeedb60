"""`python -m levante_tasks.testing.forked_doubles ARGS`: `python -m levante_tasks.testing.matrix_doubles ARGS`
without its start-up, for the matrix runner's tests (config key `lmms_eval_module`): run in a fork of a zygote
through the test process's dispatcher (`fork_stream`), or exec'd as that command where there is none."""

import sys

from levante_tasks.testing import fork_stream

if __name__ == "__main__":
    fork_stream.run("matrix_doubles", sys.argv[1:])
