#!/usr/bin/env bash
# Set up IndexFoundry on a fresh machine: system packages, a virtualenv in .venv, CPU torch,
# and the package itself. `scripts/setup.sh --dev` also installs the test and lint tools.
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
[ "${1:-}" = "--dev" ] && extras="[dev]"

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
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".${extras}"
echo "IndexFoundry is installed in .venv ($(.venv/bin/indexfoundry --version))" >&2
