#!/usr/bin/env python3
"""Patch, check, revert or audit the pinned lmms-eval without installing levante-tasks (stdlib only).

Usage: python scripts/patch_lmms_eval.py {patch,check,revert,audit} [--target DIR] [--dry-run]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from levante_tasks.lmms.patcher.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
