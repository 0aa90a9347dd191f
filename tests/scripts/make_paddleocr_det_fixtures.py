"""Write tests/fixtures/paddleocr_det_configs/ from a PaddleOCR checkout: each det YAML's keys and values, re-dumped.

    python tests/scripts/make_paddleocr_det_fixtures.py --ppocr-src /path/to/PaddleOCR

Covers every YAML under configs/det/PP-OCRv3 .. PP-OCRv6 (v6: newer than a ~Dec 2025 checkout) plus the ResNet DB
files (LEGACY). Each fixture is ``yaml.safe_load`` of the real file dumped again in its key order (anchors resolved,
comments dropped); the path under configs/det is kept.
"""
from __future__ import annotations

from pathlib import Path

from make_paddleocr_rec_fixtures import run_cli  # same folder: the one re-dump (keys and values, no comments)

GENERATIONS = ("PP-OCRv3", "PP-OCRv4", "PP-OCRv5", "PP-OCRv6")
LEGACY = ("det_r50_vd_db.yml", "ch_ppocr_v2.0/ch_det_res18_db_v2.0.yml", "ch_ppocr_v2.0/ch_det_mv3_db_v2.0.yml")
OUT = Path(__file__).resolve().parents[1] / "fixtures" / "paddleocr_det_configs"


def main() -> None:
    run_cli("det", lambda det: [p for g in GENERATIONS for p in sorted((det / g).glob("*.y*ml"))] +
            [det / n for n in LEGACY], OUT, __doc__, Path(__file__).name)


if __name__ == "__main__":
    main()
