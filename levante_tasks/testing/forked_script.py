"""`python -m levante_tasks.testing.forked_script SCRIPT ARGS`: `python SCRIPT ARGS` without the start-up of the
libraries it imports (torch, transformers, lmms-eval), for a benchmark's smoke run under the test suite: run in a fork
of a zygote through the test process's dispatcher (`fork_stream`), or exec'd as that command where there is none."""

import sys

from levante_tasks.testing import fork_stream

if __name__ == "__main__":
    fork_stream.run("script", sys.argv[1:])
