"""`python -m levante_tasks` is the same as the `levante-tasks` command."""

import sys

from levante_tasks.cli import main

sys.exit(main())
