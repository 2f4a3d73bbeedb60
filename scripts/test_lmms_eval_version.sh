#!/usr/bin/env bash
# Check levante-tasks against one lmms-eval version we ship patches for, without a second full install: a
# throwaway venv layered on .venv (its own site-packages first, .venv's after) gets that version's pinned PyPI
# wheel (hash-checked against pins.txt) and levante-tasks from a wheel freshly built from this checkout. From a
# folder outside the checkout it then runs `levante-tasks lmms-eval patch` + `check` (patch sets from the
# installed wheel) and, on the synthetic release (`levante-tasks demo --prepare-only`), one multiple-choice and one
# generation task run through the lmms-eval CLI (tasks found by the entry point); then pytest with the remaining
# arguments, if any, from the checkout.
# Usage: scripts/test_lmms_eval_version.sh VERSION [PYTEST ARGS...]
# Env: VENV (default .venv, must be installed: `make venv`), OVERLAY (default $VENV/overlays/lmms-eval-VERSION).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

VERSION=${1:?usage: scripts/test_lmms_eval_version.sh VERSION [PYTEST ARGS...]}
shift
VENV=${VENV:-.venv}
OVERLAY=${OVERLAY:-$VENV/overlays/lmms-eval-$VERSION}
PINS=levante_tasks/lmms/patcher/patches/lmms-eval/v$VERSION/pins.txt
fail() { echo "test_lmms_eval_version: error: $*" >&2; exit 2; }
[ -f "$PINS" ] || fail "$PINS: no patch set for lmms-eval $VERSION"
[ -x "$VENV/bin/python" ] || fail "$VENV/bin/python: no venv here (run make venv)"
read -r _ WHEEL WHEEL_SHA256 < <(grep '^wheel ' "$PINS") || fail "$PINS: no 'wheel <file> <sha256>' line"
start=$SECONDS
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# 1. The overlay venv: .venv's packages through a .pth that processes .venv's own .pth files (addsitedir).
rm -rf "$OVERLAY"
"$VENV/bin/python" -m venv --without-pip "$OVERLAY"
OVERLAY=$(cd "$OVERLAY" && pwd)
PY=$OVERLAY/bin/python
main_site=$(cd "$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" && pwd)
site=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "import site; site.addsitedir('$main_site')" >"$site/zz-levante-main-venv.pth"

# 2. lmms-eval VERSION: exactly the pinned wheel. --ignore-installed: never touch .venv's own lmms-eval.
echo "lmms-eval==$VERSION --hash=sha256:$WHEEL_SHA256" >"$WORK/lmms-eval.txt"
"$PY" -m pip install --quiet --no-deps --ignore-installed --require-hashes -r "$WORK/lmms-eval.txt"

# 3. levante-tasks as a plain wheel, built from a copy so the checkout gets no build/ or egg-info.
mkdir "$WORK/src"
cp -a pyproject.toml README.md LICENSE levante_tasks adapters "$WORK/src/"
find "$WORK/src" -name __pycache__ -prune -exec rm -rf {} +
"$VENV/bin/python" -m pip wheel --quiet --no-deps -w "$WORK/dist" "$WORK/src" >"$WORK/build.log" 2>&1 ||
    { cat "$WORK/build.log" >&2; fail "building the levante-tasks wheel failed (see the log above)"; }
"$PY" -m pip install --quiet --no-deps --ignore-installed "$WORK"/dist/levante_tasks-*.whl

# 4. From outside the checkout: the wheel's patcher, then a real task run.
cd "$WORK"
"$PY" - "$site" "$VERSION" "$WHEEL" <<'EOF'
import importlib.metadata, sys
import levante_tasks, lmms_eval
site, version, wheel = sys.argv[1:]
for module in (levante_tasks, lmms_eval):
    assert module.__file__.startswith(site + "/"), f"{module.__name__} imported from {module.__file__}, not {site}"
assert importlib.metadata.version("lmms_eval") == version, importlib.metadata.version("lmms_eval")
print(f"overlay: lmms-eval {version} ({wheel}) and levante-tasks from its wheel")
EOF
"$OVERLAY/bin/levante-tasks" lmms-eval patch
"$OVERLAY/bin/levante-tasks" lmms-eval check >/dev/null
"$PY" -c 'from levante_tasks.lmms.patcher import installed_lmms_eval as i; r = i(); print(r); assert r["patched"], r'
"$OVERLAY/bin/levante-tasks" demo --prepare-only --out demo >prepare.log 2>&1 ||
    { cat prepare.log >&2; fail "levante-tasks demo --prepare-only failed (see the log above)"; }
if ! LEVANTE_DATA_DIR=$WORK/demo/data HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 "$PY" -m lmms_eval --model dummy \
    --tasks levante_vocab_mc,levante_vocab --output_path out --verbosity WARNING >run.log 2>&1; then
    tail -40 run.log >&2
    fail "lmms-eval $VERSION: the task run failed (see the log above)"
fi
"$PY" - <<'EOF'
import json, pathlib
(found,) = pathlib.Path("out").rglob("*_results.json")
results = json.loads(found.read_text())["results"]
for task in ("levante_vocab_mc", "levante_vocab"):
    assert 0.0 <= results[task]["levante_acc,none"] <= 1.0, results
print("task run:", {task: round(results[task]["levante_acc,none"], 3) for task in sorted(results)})
EOF
echo "lmms-eval $VERSION: wheel install, patch, check and task run OK ($((SECONDS - start)) s)"

# 5. The test files given, with this version's lmms-eval.
if [ $# -gt 0 ]; then
    cd "$REPO"
    "$PY" -m pytest -p no:cacheprovider "$@"
    echo "lmms-eval $VERSION: tests done ($((SECONDS - start)) s in all)"
fi
