"""A clean console: every warning shows once per process, and our per-sample code never resets Python's
once-per-location warning registry (issue 20 item 1: 16,013 copies of paddle's BatchNorm warning)."""
from __future__ import annotations

import io
import json
import re
import warnings
from collections import Counter

import numpy as np
import paddle
from PIL import Image

from conftest import run_launch
from paddle_recipes.cli import quiet_known_warnings
from paddle_recipes.data import image_pixels
from paddle_recipes.weights.pretrained import load_pretrained

RECIPE = "recipes/ocr_rec.py"
SMOKE = "recipes/configs/ocr_rec_smoke.yml"
PY_WARNING = re.compile(r"^\S+:\d+: \w*Warning: ")        # warnings.showwarning's first line
LOG_WARNING = re.compile(r"^\[[^]]*\] \[rank \d+\] WARNING ")  # our log lines; the timestamp is stripped


def _emit():
    warnings.warn("a warning from one place", UserWarning)


def _shown(work) -> int:
    """How often _emit's warning shows around work() under Python's default action (once per location)."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("default")
        _emit()
        work()
        _emit()
    return sum("a warning from one place" in str(w.message) for w in rec)


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (40, 10)).save(buf, format="PNG")
    return buf.getvalue()


def test_image_header_read_keeps_the_once_per_location_registry():
    data = _png()
    assert image_pixels(data) == 400
    assert _shown(lambda: [image_pixels(data) for _ in range(3)]) == 1


def test_pretrained_load_keeps_the_registry_and_warns_nothing(tmp_path):
    paddle.seed(0)
    model = paddle.nn.Sequential(paddle.nn.Linear(4, 3), paddle.nn.Linear(3, 2))
    state = {k: v for k, v in model.state_dict().items() if k != "1.bias"}  # one tensor missing: kept at init
    paddle.save(state, str(tmp_path / "w.pdparams"))
    init_bias = model.state_dict()["1.bias"].numpy().copy()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        rep = load_pretrained(model, tmp_path / "w.pdparams", strict=False)
    assert rep.missing == ["1.bias"] and sorted(rep.loaded) == ["0.bias", "0.weight", "1.weight"]
    assert [str(w.message) for w in rec] == []  # paddle's "Skip loading ... not found" is not raised either
    np.testing.assert_array_equal(model.state_dict()["1.bias"].numpy(), init_bias)
    assert _shown(lambda: load_pretrained(model, tmp_path / "w.pdparams", strict=False)) == 1


def test_known_noise_is_filtered_and_other_warnings_still_show():
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("default")
        quiet_known_warnings()
        bn = paddle.nn.BatchNorm2D(2)
        bn.train()
        bn(paddle.randn([2, 2, 3, 3]))
        warnings.warn(Image.DecompressionBombWarning("huge"))
        _emit()
    assert [str(w.message) for w in rec] == ["a warning from one place"]


def _duplicates(log: str) -> dict:
    lines = [re.sub(r"^\[[^]]*\] ", "[time] ", ln) for ln in log.splitlines()
             if PY_WARNING.match(ln) or LOG_WARNING.match(ln)]
    return {ln: n for ln, n in Counter(lines).items() if n > 1}


def test_two_process_run_prints_each_warning_once_per_process(tmp_path):
    """2 ranks x 2 epochs (train/eval mode switches, per-sample header reads): no warning line twice in a rank's log."""
    out = tmp_path / "out"
    run_launch(RECIPE, ["-c", SMOKE, "-o", f"Global.output_dir={out}", f"Synthetic.root={tmp_path / 'synth'}",
                        "Global.epochs=2", "Global.log_every=1"], nproc=2, log_dir=tmp_path / "log")
    logs = sorted((tmp_path / "log").glob("workerlog.*"))
    assert len(logs) == 2
    assert "epoch: [2/2]" in logs[0].read_text(errors="replace")  # rank 0 logged the steps of both epochs
    for f in logs:
        text = f.read_text(errors="replace")
        assert "we now always track global mean" not in text
        assert _duplicates(text) == {}, f.name
    s = json.loads((out / "summary.json").read_text())
    assert s["world_size"] == 2 and s["epoch"] == 2 and np.isfinite(s["history"][-1]["loss"])
