#!/usr/bin/env bash
# Clone lmms-eval at the pinned tag into third_party/lmms-eval (needs GitHub access), verify that the tag still
# names the pinned commit and that every file matches the pinned hashes. Re-running on a good checkout is a no-op.
# The tag and commit come from the patch set's pins.txt; only versions with a public commit can be fetched.
# Overrides (for mirrors and tests): LMMS_EVAL_VERSION (default 0.7.2), LMMS_EVAL_URL, LMMS_EVAL_DEST,
# PYTHON (any Python >= 3.10; stdlib only).
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=${LMMS_EVAL_VERSION:-0.7.2}
PINS=levante_tasks/lmms/patcher/patches/lmms-eval/v$VERSION/pins.txt
if [ ! -f "$PINS" ]; then
    echo "fetch_lmms_eval: error: $PINS: no patch set for lmms-eval $VERSION" >&2
    exit 1
fi
read -r _ _ TAG COMMIT < <(grep '^upstream ' "$PINS")
if [ "$COMMIT" = "-" ]; then
    echo "fetch_lmms_eval: error: lmms-eval $VERSION has no public tag or commit yet (pinned by its PyPI wheel only);" \
        "use the installed wheel" >&2
    exit 1
fi
URL=${LMMS_EVAL_URL:-https://github.com/EvolvingLMMs-Lab/lmms-eval.git}
DEST=${LMMS_EVAL_DEST:-third_party/lmms-eval}

if [ -e "$DEST" ] && [ ! -d "$DEST/.git" ]; then
    echo "fetch_lmms_eval: error: $DEST exists but is not a git checkout; move it away first" >&2
    exit 1
fi
if [ ! -e "$DEST" ]; then
    git -c advice.detachedHead=false clone --quiet --depth 1 --branch "$TAG" "$URL" "$DEST"
fi

head=$(git -C "$DEST" rev-parse HEAD)
if [ "$head" != "$COMMIT" ]; then
    echo "fetch_lmms_eval: error: $DEST is at $head, not the pinned commit $COMMIT ($TAG)" >&2
    exit 1
fi
# Every file of the commit must be present and match its pinned hash (our patched files count as matching).
if ! report=$("${PYTHON:-python3}" scripts/patch_lmms_eval.py audit --target "$DEST" 2>&1); then
    echo "$report" >&2
    echo "fetch_lmms_eval: error: files in $DEST differ from the pinned commit (see the audit above)" >&2
    exit 1
fi
echo "fetch_lmms_eval: $DEST is $TAG = $COMMIT; every pinned file verified."
echo "next: python scripts/patch_lmms_eval.py patch --target $DEST   (then: pip install --no-deps -e $DEST)"
