"""Fault suite: the one image reader (data.images) in every mode, issue 37 items 2-5, 9, 10.

Special files (a FIFO hung training/eval/predict; a /dev/zero link was read until OOM), a byte cap, a pixel cap
from the header of every format OpenCV decodes (a 10000x10000 Radiance HDR named .jpg was decoded in full, 1.6-3.1
GB), det/system predict without a pixel cap (20000x20000 JPEG: 2.4 GB), a 1e30 polygon (OverflowError in pyclipper)
and a 20000-px one (make_border_map OOM), and a det label file with no readable image (trained zero-sample batches).
Every test that could block on a FIFO runs under an alarm, so a regression fails instead of hanging.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from contextlib import contextmanager
from types import SimpleNamespace

import cv2
import numpy as np
import pytest

from paddle_recipes.data import DataError, ImageError, check_file, image_pixels, image_size, read_image

ZERO = "/dev/zero"


@contextmanager
def deadline(seconds: int = 5):
    """Fail (TimeoutError) instead of hanging when a FIFO is opened or read by mistake."""
    def _raise(*_):
        raise TimeoutError(f"blocked for more than {seconds} s (a FIFO was opened?)")
    old = signal.signal(signal.SIGALRM, _raise)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _png(path, h=32, w=48):
    cv2.imwrite(str(path), np.full((h, w, 3), 200, np.uint8))
    return path


def _jpeg_claiming(path, w=20000, h=20000):
    """A real 16x16 JPEG whose frame header (SOF0) says w x h: 600 bytes that decode to 1.2 GB."""
    data = bytearray(cv2.imencode(".jpg", np.zeros((16, 16, 3), np.uint8))[1].tobytes())
    sof = data.index(b"\xff\xc0")
    data[sof + 5:sof + 9] = h.to_bytes(2, "big") + w.to_bytes(2, "big")
    path.write_bytes(bytes(data))
    return path


def _hdr(path, w=10000, h=10000):
    """A Radiance HDR of w x h (run-length encoded, one colour: 6.4 MB for 10000 x 10000), named .jpg."""
    runs = bytearray()
    for _ in range(4):  # R, G, B, E: runs of at most 127
        left = w
        while left:
            n = min(127, left)
            runs += bytes([128 + n, 100])
            left -= n
    line = bytes([2, 2, w >> 8, w & 255]) + bytes(runs)
    path.write_bytes(b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y %d +X %d\n" % (h, w) + line * h)
    return path


@pytest.fixture()
def bad_files(tmp_path):
    """{name: path} of every kind of bad image, plus one good PNG."""
    d = tmp_path / "imgs"
    d.mkdir()
    os.mkfifo(d / "fifo.jpg")
    (d / "zero.jpg").symlink_to(ZERO)
    (d / "fifo_link.png").symlink_to(d / "fifo.jpg")
    files = {"good": _png(d / "a_good.png"), "fifo": d / "fifo.jpg", "zero": d / "zero.jpg",
             "fifo_link": d / "fifo_link.png", "big_jpeg": _jpeg_claiming(d / "big.jpg"),
             "hdr": _hdr(d / "hdr.jpg", 4000, 4000), "garbage": d / "garbage.png", "missing": d / "missing.png"}
    files["garbage"].write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    return files


EXPECTED = {"fifo": "not_a_file", "zero": "not_a_file", "fifo_link": "not_a_file", "big_jpeg": "too_large",
            "hdr": "too_large", "garbage": "corrupt_image", "missing": "missing_image"}


def test_every_bad_file_is_refused_in_one_line_and_never_decoded(bad_files, monkeypatch):
    real = cv2.imdecode
    decoded = []
    monkeypatch.setattr(cv2, "imdecode", lambda buf, flags: decoded.append(len(buf)) or real(buf, flags))
    with deadline():
        assert read_image(bad_files["good"]).shape == (32, 48, 3)
        for kind, reason in EXPECTED.items():
            with pytest.raises(ImageError) as err:
                read_image(bad_files[kind], max_pixels=10_000_000)
            assert err.value.reason == reason, (kind, str(err.value))
            assert str(bad_files[kind]) in str(err.value) and "\n" not in str(err.value)
    assert len(decoded) == 1  # the good PNG only: the garbage one has a PNG signature but no header
    with pytest.raises(ImageError, match=r"zero.jpg: a character device, not a regular file: not read"):
        check_file(bad_files["zero"])
    with pytest.raises(ImageError, match=r"fifo.jpg: a FIFO, not a regular file"):
        check_file(bad_files["fifo"])


def test_byte_cap(tmp_path):
    f = _png(tmp_path / "a.png", 64, 64)
    size = f.stat().st_size
    with pytest.raises(ImageError, match=rf"a.png: {size} bytes > max_image_bytes 100: not read") as err:
        read_image(f, max_bytes=100)
    assert err.value.reason == "file_too_large"
    assert read_image(f, max_bytes=size).shape == (64, 64, 3) and read_image(f, max_bytes=0).shape == (64, 64, 3)


def test_header_size_of_every_format_opencv_decodes():
    """Each format this OpenCV build writes is sized from its header alone; bytes of no known format and a known
    signature with an unreadable header are refused (never handed to the decoder)."""
    img = np.random.default_rng(0).integers(0, 255, (37, 53, 3), dtype=np.uint8)
    exts = [".jpg", ".png", ".bmp", ".tif", ".webp", ".jp2", ".ppm", ".pam", ".pfm", ".sr", ".hdr", ".gif", ".avif"]
    sized = {}
    for ext in exts:
        src = img.astype(np.float32) / 255 if ext in (".hdr", ".pfm") else img
        try:
            ok, buf = cv2.imencode(ext, src)
        except cv2.error:
            continue  # not built in: its decoder is absent too
        found = image_size(buf.tobytes())
        sized[ext] = found and found[1:]
        assert read_image(buf.tobytes()).shape == (37, 53, 3), ext
    assert sized and all(v == (53, 37) for v in sized.values()), sized
    assert image_size(cv2.imencode(".pgm", img[:, :, 0])[1].tobytes())[1:] == (53, 37)
    for data in (b"v/1\x01" + b"\0" * 64, b"\xff\x0a" + b"\0" * 64, b"", b"GIF89a"):  # EXR, JPEG XL, empty, truncated
        assert image_size(data) is None
        with pytest.raises(ImageError, match="not an image whose size its header gives") as err:
            read_image(data)
        assert err.value.reason == "corrupt_image"


def test_hdr_bomb_named_jpg_is_refused_with_bounded_memory(tmp_path):
    """The 6.4 MB 10000x10000 HDR of the issue: refused from its header, in a process that stays small."""
    f = _hdr(tmp_path / "bomb.jpg")
    assert image_pixels(f) == 10000 * 10000 and image_pixels(f.read_bytes()) == 10000 * 10000
    code = textwrap.dedent(f"""
        def peak_mb():  # VmHWM: this process's own peak (ru_maxrss may carry the parent's across a vfork + exec)
            return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) // 1024
        from paddle_recipes.data import ImageError, read_image
        try:
            read_image({str(f)!r})
        except ImageError as exc:
            print(exc.reason)
        print(peak_mb())
        import numpy as np
        from paddle_recipes.tasks.ocr_det.label_maps import make_border_map
        before = peak_mb()
        # a 20000-px polygon on a 128-px page, and one with 1e30 coordinates: bounded, no OverflowError
        for big in (20000.0, 1e30):
            poly = np.array([[5, 5], [big, 5], [big, big], [5, big]])
            tmap, tmask = make_border_map(128, 128, [poly], [False])
            assert tmap.shape == (128, 128) and np.isfinite(tmap).all() and tmask.sum() > 0
        print(peak_mb() - before)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    reason, peak_mb, maps_mb = out.stdout.split()
    assert reason == "too_large"
    assert int(peak_mb) < 200, f"peak RSS {peak_mb} MB reading the bomb (a full decode is 1.6-3.1 GB)"
    assert int(maps_mb) < 50, f"make_border_map grew RSS by {maps_mb} MB (the 20000-px polygon needed 12.8 GB)"


def _rec_set(tmp_path, names):
    from paddle_recipes.tasks.ocr_rec.charset import CharDict
    from paddle_recipes.tasks.ocr_rec.dataset import DatasetConfig, RecDataset

    lf = tmp_path / "rec.txt"
    lf.write_text("".join(f"{n}\tab\n" for n in names), encoding="utf-8")
    cfg = DatasetConfig(data_dir=str(tmp_path / "imgs"), label_file_list=[str(lf)], max_image_pixels=10_000_000)
    return RecDataset(cfg, CharDict(list("ab")), (3, 32, 64), 6)


def test_rec_dataset_counts_special_files_at_build_and_bombs_at_load(tmp_path, bad_files):
    with deadline():
        ds = _rec_set(tmp_path, [p.name for p in bad_files.values()])
        counts = ds.stats.counts()
        assert counts["not_a_file"] == 3 and counts["missing_image"] == 1, counts
        loaded = [ds.load(i) for i in range(len(ds))]
    skips = sorted(s[2] for s in loaded if isinstance(s, tuple))
    assert skips == ["corrupt_image", "too_large", "too_large"]
    assert sum(isinstance(s, dict) for s in loaded) == 1


def _det_line(name, points):
    return f"{name}\t{json.dumps([{'transcription': 'ab', 'points': points}])}\n"


def test_det_dataset_skips_special_files_and_bombs(tmp_path, bad_files):
    from paddle_recipes.tasks.ocr_det.dataset import DetDataset

    lf = tmp_path / "det.txt"
    lf.write_text("".join(_det_line(p.name, [[2, 2], [30, 2], [30, 20], [2, 20]]) for p in bad_files.values()))
    with deadline():
        ds = DetDataset(lf, tmp_path / "imgs", max_image_pixels=10_000_000)
        loaded = [ds.load(i) for i in range(len(ds))]
    assert ds.stats.counts()["not_a_file"] == 3 and ds.stats.counts()["missing_image"] == 1
    assert sorted(s[2] for s in loaded if isinstance(s, tuple)) == ["corrupt_image", "too_large", "too_large"]


def test_det_polygons_clipped_counted_and_bounded_in_training(tmp_path):
    """A 1e30 polygon (OverflowError in pyclipper) and a 20000-px one on a 128-px page train; a polygon wholly
    outside is dropped and counted through the batch, as every skip is."""
    from paddle_recipes.tasks.ocr_det.batch import collate
    from paddle_recipes.tasks.ocr_det.dataset import DetDataset
    from paddle_recipes.tasks.ocr_det.transforms import DBTrainTransform

    (tmp_path / "imgs").mkdir()
    _png(tmp_path / "imgs" / "p.png", 128, 128)
    items = [{"transcription": "a", "points": [[10, 10], [1e30, 10], [1e30, 1e30], [10, 1e30]]},
             {"transcription": "b", "points": [[20, 20], [20000, 20], [20000, 20000], [20, 20000]]},
             {"transcription": "c", "points": [[300, 300], [340, 300], [340, 320], [300, 320]]}]
    lf = tmp_path / "det.txt"
    lf.write_text(f"p.png\t{json.dumps(items)}\n")
    ds = DetDataset(lf, tmp_path / "imgs", transform=DBTrainTransform(size=(64, 64), augment=False, seed=0))
    raw = ds.load(0)
    assert [float(p.max()) for p in raw["polys"]] == [128.0, 128.0]
    batch = collate([ds[0], ds[0]])
    assert batch["skipped"] == [f"{lf}:1 polygon 2\toutside_image"] * 2
    assert all(np.isfinite(batch[k]).all() for k in ("threshold_map", "shrink_map", "image"))


def test_det_set_without_a_readable_image_fails_at_build(tmp_path):
    """A garbage label file (valid lines naming images that do not exist), an empty one, and one whose only
    images are corrupt: one DataError line when the set is built, never zero-sample batches."""
    from paddle_recipes.tasks.ocr_det.dataset import DetDataset

    (tmp_path / "imgs").mkdir()
    lf = tmp_path / "garbage.txt"
    lf.write_text("".join(_det_line(f"x{i}.jpg", [[0, 0], [9, 0], [9, 9]]) for i in range(20000)) + "junk\n" * 1000)
    with pytest.raises(DataError, match=r"no usable sample \(.*missing_image=20000") as err:
        DetDataset(lf, tmp_path / "imgs", name="train")
    assert "\n" not in str(err.value) and str(lf) in str(err.value)
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(DataError, match="no usable sample"):
        DetDataset(tmp_path / "empty.txt", tmp_path / "imgs")
    (tmp_path / "imgs" / "bad.jpg").write_bytes(b"\xff\xd8\xff" + b"\0" * 100)
    lf.write_text(_det_line("bad.jpg", [[0, 0], [9, 0], [9, 9]]) * 3)
    with pytest.raises(DataError, match=r"no usable sample \(.*corrupt_image=3"):
        DetDataset(lf, tmp_path / "imgs")


class _ZeroMaps:
    """A det model stand-in: an all-zero probability map (no boxes)."""

    def eval(self):
        return self

    def __call__(self, x):
        import paddle

        return {"maps": paddle.zeros([x.shape[0], 1, *x.shape[2:]])}


def test_det_and_system_predict_skip_bad_files_and_write_the_good(tmp_path, bad_files):
    from paddle_recipes.tasks.ocr_det.postprocess import DBPostProcess
    from paddle_recipes.tasks.ocr_det.predict import predict_files
    from paddle_recipes.tasks.ocr_det.transforms import DBEvalTransform
    from paddle_recipes.tasks.ocr_system.pipeline import OcrPipeline, run_files

    files = [str(p) for p in bad_files.values()]
    with deadline(20):
        results, bad = predict_files(_ZeroMaps(), files, DBEvalTransform(limit_side_len=64), DBPostProcess(),
                                     tmp_path / "det", limits=(10_000_000, 2 ** 20))
        out = run_files(OcrPipeline(lambda im: ([], []), lambda crops: []), files, tmp_path / "sys", None,
                        limits=(10_000_000, 2 ** 20))
    assert [r[0] for r in results] == [str(bad_files["good"])]
    assert dict(bad) == {str(bad_files[k]): v for k, v in {
        "fifo": "a FIFO, not a regular file: not read", "zero": "a character device, not a regular file: not read",
        "fifo_link": "a FIFO, not a regular file: not read",
        "big_jpeg": "JPEG of 20000x20000 = 400000000 pixels > max_image_pixels 10000000: not decoded",
        "hdr": "Radiance HDR of 4000x4000 = 16000000 pixels > max_image_pixels 10000000: not decoded",
        "garbage": ("not an image whose size its header gives (empty, truncated or an unsupported format): "
                    "not decoded"),
        "missing": "cannot read (No such file or directory)"}.items()}
    assert (tmp_path / "det" / "det_results.txt").read_text().startswith(str(bad_files["good"]))
    assert (out["images"], out["skipped"]) == (1, 7)
    assert (tmp_path / "sys" / "system_results.txt").read_text().startswith(str(bad_files["good"]))


def test_predict_with_nothing_readable_is_an_error():
    from paddle_recipes.recipes.base import Recipe

    recipe = Recipe.__new__(Recipe)
    recipe.name, recipe.cfg = "ocr_det", SimpleNamespace(Predict=SimpleNamespace(images="pages/"))
    recipe.load_for_inference = lambda: (None, "")
    recipe.predict_model = lambda model: []
    with pytest.raises(DataError, match=r"^ocr_det predict: no input could be read in 'pages/'"):
        recipe.predict()
    recipe.predict_model = lambda model: [("a.png", [])]
    assert recipe.predict() == [("a.png", [])]
