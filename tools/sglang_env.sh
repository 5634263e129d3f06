#!/usr/bin/env bash
# Build (once) the pinned SGLang venv used to record real startups and to run the live tests.
# The venv lives outside the repo, keyed by the version: LOGSENSE_SGLANG_CACHE moves the cache,
# LOGSENSE_SGLANG_VENV names the venv itself.
# Prints the venv path on success; exits non-zero with one clear line when the install fails.
set -euo pipefail

SGLANG_VERSION="${LOGSENSE_SGLANG_VERSION:-0.5.23}"
VENV="${LOGSENSE_SGLANG_VENV:-${LOGSENSE_SGLANG_CACHE:-$HOME/.cache/logsense-sglang}/$SGLANG_VERSION/venv}"
PYTHON="${LOGSENSE_SGLANG_PYTHON:-python3.11}"

if [ -x "$VENV/bin/python" ] && [ -f "$VENV/.logsense-complete" ]; then
    echo "$VENV"
    exit 0
fi

command -v "$PYTHON" >/dev/null || { echo "sglang_env: $PYTHON not found (sglang $SGLANG_VERSION wheels are cp311)" >&2; exit 2; }

start=$(date +%s)
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$PYTHON" -m venv "$VENV"
# sglang pins torch exactly, so pip resolves the matching torch build itself.
# (grep drops the notes pip prints for every find-links location a package is absent from)
if ! "$VENV/bin/pip" install --quiet --progress-bar off "sglang==$SGLANG_VERSION" 2>&1 \
        | { grep -v "^WARNING: Location '.*' is ignored" || true; } >&2; then  # pipefail: pip's status
    echo "sglang_env: FAILED to install sglang==$SGLANG_VERSION into $VENV" >&2
    exit 1
fi
if ! "$VENV/bin/python" -c "import sglang.launch_server" >/dev/null 2>&1; then
    echo "sglang_env: sglang==$SGLANG_VERSION installed but 'import sglang.launch_server' fails in $VENV" >&2
    exit 1
fi
touch "$VENV/.logsense-complete"
echo "sglang_env: installed sglang==$SGLANG_VERSION in $(( $(date +%s) - start )) s" >&2
echo "$VENV"
