#!/usr/bin/env bash
# Create (or reuse) the side venv that holds the real paddleocr 3.x, used by
# tests/test_paddleocr_inference.py to check that our OCR export runs in PaddleOCR's inference.
# Idempotent: a venv whose marker file matches the pinned versions is reused as is.
# Location: $PADDLEOCR_VENV, default <repo>/.venv-paddleocr (gitignored).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${PADDLEOCR_VENV:-$PWD/.venv-paddleocr}"
PINS="paddleocr==3.7.0 paddlex==3.7.2 paddlepaddle==3.3.1"
MARKER="$VENV/.paddle-recipes-pins"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$MARKER" 2>/dev/null)" = "$PINS" ]; then
    echo "== paddleocr venv: reusing $VENV ($PINS)"
    exit 0
fi
echo "== paddleocr venv: creating $VENV ($PINS)"
python3 -m venv --clear "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install -q $PINS
"$VENV/bin/python" -c "from paddleocr import TextRecognition; print('paddleocr import ok')"
echo "$PINS" > "$MARKER"
