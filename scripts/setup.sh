#!/usr/bin/env bash
# Set up IndexFoundry on a fresh machine: system packages, a virtualenv in .venv, CPU torch,
# and the package itself. `scripts/setup.sh --dev` also installs the test and lint tools.
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH_PIN="torch==2.13.0"
TORCH_CPU_INDEX="https://download.pytorch.org/whl/cpu"

# The torch install commands, one per line, in the order they are tried. On Linux the public
# index resolves torch to the CUDA build (+ ~20 nvidia/triton packages), so PyTorch's CPU index
# comes first, for torch only, failing fast (no retries, short timeout) where it is unreachable;
# then the default index. macOS and Windows wheels on PyPI are CPU-only already.
# SETUP_OS overrides `uname -s` (tests print the commands for each platform).
torch_commands() {
  local os="${SETUP_OS:-$(uname -s)}"
  if [ "$os" = "Linux" ]; then
    echo "python -m pip install -q --retries 0 --timeout 10 --index-url $TORCH_CPU_INDEX $TORCH_PIN"
  fi
  echo "python -m pip install -q $TORCH_PIN"
}

extras=""
case "${1:-}" in
  --dev) extras="[dev]" ;;
  --print-torch-command) torch_commands; exit 0 ;;
  "") ;;
  *) echo "usage: scripts/setup.sh [--dev | --print-torch-command]" >&2; exit 2 ;;
esac

# tesseract for PDF OCR (Debian/Ubuntu; skipped when present or when apt is not usable).
if ! command -v tesseract >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    apt-get update -q >/dev/null && apt-get install -y -q tesseract-ocr >/dev/null
  else
    echo "note: install tesseract-ocr for OCR of scanned PDFs (e.g. sudo apt-get install tesseract-ocr)" >&2
  fi
fi

# chromium for the HTTP search page's browser tests (--dev only; Debian's package, driven by Playwright).
if [ -n "$extras" ] && [ ! -x /usr/bin/chromium ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null
  else
    echo "note: install chromium for the web page tests (e.g. sudo apt-get install chromium)" >&2
  fi
fi

# iproute2's `ip` for the Ray tests (--dev only): they run a local Ray cluster inside a network
# namespace with only loopback up (tests/integration/ray_support.py).
if [ -n "$extras" ] && ! command -v ip >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    apt-get update -q >/dev/null && apt-get install -y -q iproute2 >/dev/null
  else
    echo "note: install iproute2 for the Ray executor tests (e.g. sudo apt-get install iproute2)" >&2
  fi
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# CPU-only torch first: a plain 'torch' requirement would pull a multi-GB CUDA build.
installed=""
while IFS= read -r command; do
  # shellcheck disable=SC2086  # the command is a word list on purpose
  if .venv/bin/$command 2>/dev/null; then installed="yes"; break; fi
  echo "note: '$command' failed; trying the next way to install torch" >&2
done < <(torch_commands)
[ -n "$installed" ] || { echo "error: could not install $TORCH_PIN" >&2; exit 1; }
.venv/bin/python -m pip install -q -e ".${extras}"
echo "IndexFoundry is installed in .venv ($(.venv/bin/indexfoundry --version))" >&2
# Once per machine: the default model's ONNX file (about a minute), so the first run, search or
# agent does not wait for it; a second process asking for it meanwhile waits and gets the same file.
if ! .venv/bin/indexfoundry index prepare --model local >&2; then
  echo "note: the local model's ONNX file was not made now; the first run makes it" >&2
fi
echo "next: .venv/bin/indexfoundry pipeline run examples/docs.yaml && .venv/bin/indexfoundry search \"how do I install it\"" >&2
echo "      .venv/bin/indexfoundry mcp --docs ./docs      # point an agent at a docs folder" >&2
