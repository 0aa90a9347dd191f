#!/usr/bin/env bash
# Create (or reuse) a side venv holding the real paddleocr, in which tests/paddleocr/test_paddleocr_inference.py
# runs our OCR export. Idempotent: a venv whose marker file lists the pinned versions is reused as is.
#   .ci/setup_paddleocr_venv.sh      paddleocr 3.x -> $PADDLEOCR_VENV  (default <repo>/.venv-paddleocr; .ci/run builds it)
#   .ci/setup_paddleocr_venv.sh 2    paddleocr 2.x -> $PADDLEOCR2_VENV (default <repo>/.venv-paddleocr2; optional)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-3}" = "2" ]; then
    VENV="${PADDLEOCR2_VENV:-$PWD/.venv-paddleocr2}"
    PINS="paddleocr==2.10.0 paddlepaddle==3.3.1"
    CHECK="from paddleocr.tools.infer.predict_rec import TextRecognizer"
else
    VENV="${PADDLEOCR_VENV:-$PWD/.venv-paddleocr}"
    PINS="paddleocr==3.7.0 paddlex==3.7.2 paddlepaddle==3.3.1"
    CHECK="from paddleocr import TextRecognition"
fi
MARKER="$VENV/.paddle-recipes-pins"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$MARKER" 2>/dev/null)" = "$PINS" ]; then
    echo "== paddleocr venv: reusing $VENV ($PINS)"
    exit 0
fi
echo "== paddleocr venv: creating $VENV ($PINS)"
python3 -m venv --clear "$VENV"
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install -q $PINS 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
"$VENV/bin/python" -c "$CHECK; print('paddleocr import ok')"
echo "$PINS" > "$MARKER"
