"""Write tests/fixtures/paddleocr_det_configs/ from a PaddleOCR checkout: each det YAML's keys and values, re-dumped.

    python tests/scripts/make_paddleocr_det_fixtures.py --ppocr-src /path/to/PaddleOCR

Covers every YAML under configs/det/PP-OCRv3, PP-OCRv4, PP-OCRv5 plus the ResNet DB files (LEGACY). Each fixture
is ``yaml.safe_load`` of the real file dumped again in its key order (anchors resolved, comments dropped); the
path under configs/det is kept.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import yaml

GENERATIONS = ("PP-OCRv3", "PP-OCRv4", "PP-OCRv5")
LEGACY = ("det_r50_vd_db.yml", "ch_ppocr_v2.0/ch_det_res18_db_v2.0.yml", "ch_ppocr_v2.0/ch_det_mv3_db_v2.0.yml")
OUT = Path(__file__).resolve().parents[1] / "fixtures" / "paddleocr_det_configs"


class _Expanded(yaml.SafeDumper):
    def ignore_aliases(self, data):  # a shared node (&epoch_num) is written out at every use
        return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ppocr-src", required=True, help="PaddleOCR checkout (has configs/det)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    det = Path(args.ppocr_src) / "configs" / "det"
    files = [p for g in GENERATIONS for p in sorted((det / g).glob("*.y*ml"))] + [det / n for n in LEGACY]
    for src in files:
        rel = src.relative_to(det)
        dst = Path(args.out) / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        data = yaml.safe_load(src.read_text(encoding="utf-8"))
        dst.write_text(f"# keys and values of PaddleOCR's configs/det/{rel} (tests/scripts/make_paddleocr_det_fixtures"
                       ".py)\n" + yaml.dump(data, Dumper=_Expanded, sort_keys=False, allow_unicode=True,
                                             default_flow_style=None, width=120), encoding="utf-8")
        print(dst)


if __name__ == "__main__":
    main()
