"""Write tests/fixtures/paddleocr_configs/ from a PaddleOCR checkout: each rec YAML's keys and values, re-dumped.

    python tests/scripts/make_paddleocr_rec_fixtures.py --ppocr-src /path/to/PaddleOCR

Covers every YAML under configs/rec/PP-OCRv3, PP-OCRv4, PP-OCRv5 (multi_language included) plus the legacy
files the README names (LEGACY). Each fixture is `yaml.safe_load` of the real file dumped again in its key
order, with YAML anchors resolved and the file's comments dropped; the relative path under configs/rec is kept.
PP-OCRv6 files (newer than the checkout this was run on) are written by their own helper script.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import yaml

GENERATIONS = ("PP-OCRv3", "PP-OCRv4", "PP-OCRv5")
LEGACY = ("ch_ppocr_v2.0/rec_chinese_common_train_v2.0.yml", "rec_r34_vd_none_bilstm_ctc.yml", "rec_svtrnet.yml",
          "rec_svtrnet_ch.yml")
OUT = Path(__file__).resolve().parents[1] / "fixtures" / "paddleocr_configs"


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data):  # write a shared node out in full at every use
        return True


def rec_yamls(rec_dir: Path) -> list:
    found = [p for g in GENERATIONS for p in sorted((rec_dir / g).rglob("*")) if p.suffix in (".yml", ".yaml")]
    return found + [rec_dir / n for n in LEGACY]


def redump(src: Path, rel: Path, out_root: Path, kind: str, script: str) -> Path:
    """Write out_root/rel: PaddleOCR's configs/<kind>/<rel> (src) as keys and values, anchors resolved, no comments."""
    data = yaml.safe_load(src.read_text(encoding="utf-8"))
    dst = out_root / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    head = f"# keys and values of PaddleOCR's configs/{kind}/{rel} (tests/scripts/{script})\n"
    dst.write_text(head + yaml.dump(data, Dumper=_NoAliases, sort_keys=False, allow_unicode=True,
                                    default_flow_style=None, width=120), encoding="utf-8")
    return dst


def run_cli(kind: str, pick, out: Path, doc: str, script: str) -> None:
    """--ppocr-src DIR [--out OUT]: redump every file pick(DIR/configs/<kind>) returns."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--ppocr-src", required=True, help=f"PaddleOCR checkout (has configs/{kind})")
    ap.add_argument("--out", default=str(out))
    args = ap.parse_args()
    root = Path(args.ppocr_src) / "configs" / kind
    for src in pick(root):
        print(redump(src, src.relative_to(root), Path(args.out), kind, script))


def main() -> None:
    run_cli("rec", rec_yamls, OUT, __doc__, Path(__file__).name)


if __name__ == "__main__":
    main()
