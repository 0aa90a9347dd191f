"""PaddleOCR's eval / best / infer_rec log lines, character for character."""
import logging
import re

import numpy as np
import pytest

from paddle_recipes.formats.ppocr_logs import (PPOCR_DATE_FORMAT, PPOCR_LOG_FORMAT, PPOCREvalLog, format_cur_metric,
                                       format_infer_rec, format_rec_result_line, rec_cur_metric)


def test_cur_metric_line_matches_paddleocr():
    m = rec_cur_metric({"acc": np.float64(0.8125), "norm_edit_dis": 0.95, "num_samples": 16.0},
                       num_samples=16, seconds=0.5)
    assert list(m) == ["acc", "norm_edit_dis", "fps"]  # PaddleOCR's order; our bookkeeping key dropped
    assert format_cur_metric(m) == "cur metric, acc: 0.8125, norm_edit_dis: 0.95, fps: 32.0"
    assert format_cur_metric({"acc": 1 / 3}) == "cur metric, acc: 0.3333333333333333"  # str(), no rounding
    assert list(rec_cur_metric({"acc": 1.0, "norm_edit_dis": 1.0})) == ["acc", "norm_edit_dis"]
    with pytest.raises(KeyError, match="norm_edit_dis"):
        rec_cur_metric({"acc": 1.0})


def test_best_metric_follows_paddleocr_rules():
    from paddle_recipes.train.trainer import BestMetric

    best, log = BestMetric("acc"), PPOCREvalLog()
    assert best.update({"acc": 0.5, "norm_edit_dis": 0.7, "fps": 10.0}, epoch=1)
    assert not best.update({"acc": 0.4, "norm_edit_dis": 0.9, "fps": np.float32(11.0)}, epoch=2)
    assert log.lines({"acc": 0.4, "fps": np.float32(11.0)}, best) == [
        "cur metric, acc: 0.4, fps: 11.0", "best metric, acc: 0.5, norm_edit_dis: 0.7, fps: 10.0, best_epoch: 1"]
    assert best.update({"acc": 0.5, "norm_edit_dis": 0.8, "fps": 12.0, "per_font": {"a": 1.0}}, epoch=3)  # tie: >=
    assert log.lines({"acc": 0.5}, best)[1] == "best metric, acc: 0.5, norm_edit_dis: 0.8, fps: 12.0, best_epoch: 3"
    again = BestMetric("acc")
    again.set_state_dict(best.state_dict())
    assert log.lines({"acc": 0.5}, again) == log.lines({"acc": 0.5}, best)
    assert not best.update({"hmean": 0.3}, epoch=4) and best.epoch == 3  # no main key: not tracked
    assert PPOCREvalLog().lines({"acc": 0.1}, BestMetric("acc")) == ["cur metric, acc: 0.1"]  # no best yet


def test_infer_rec_lines_match_paddleocr():
    img, res = format_infer_rec("imgs/word_1.png", "韩国小馆", 0.998726308345794677734375)
    assert img == "infer_img: imgs/word_1.png"
    assert res == "\t result: 韩国小馆\t0.9987263"  # numpy float32 str, as PaddleOCR's CTCLabelDecode score
    assert format_infer_rec("a.jpg", "", 0.0)[1] == "\t result: \t0.0"
    assert format_rec_result_line("a.jpg", "ab", 0.5) == "a.jpg\tab\t0.5\n"


def test_log_prefix_is_paddleocr_style():
    fmt = logging.Formatter(PPOCR_LOG_FORMAT, PPOCR_DATE_FORMAT)
    rec = logging.LogRecord("root", logging.INFO, __file__, 1, "cur metric, acc: 1.0", None, None)
    line = fmt.format(rec)
    assert re.fullmatch(r"\[\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\] root INFO: cur metric, acc: 1\.0", line), line


def test_eval_state_times_inference_for_fps():
    import paddle

    from paddle_recipes.tasks.ocr_rec.charset import CharDict
    from paddle_recipes.tasks.ocr_rec.evaluate import evaluate_rec
    from paddle_recipes.tasks.ocr_rec.metrics import RecMetric
    from paddle_recipes.tasks.ocr_rec.models import build_rec_model

    paddle.seed(0)
    charset = CharDict(list("abc"))
    model = build_rec_model({"Backbone": {"name": "LCNetRec", "scale": 0.25}, "Neck": {"name": "Im2Seq"},
                             "Head": {"name": "CTCHead"}}, charset.num_classes)
    batches = [{"image": paddle.rand([2, 3, 32, 64]) * 2 - 1, "text": ["ab", "c"]} for _ in range(2)]
    state = evaluate_rec(model, batches, charset)
    assert state["total"] == 4 and state["infer_seconds"] > 0
    cur = rec_cur_metric(RecMetric.from_state(state), num_samples=state["total"], seconds=state["infer_seconds"])
    assert cur["fps"] == pytest.approx(4 / state["infer_seconds"])
    assert re.fullmatch(r"cur metric, acc: [0-9.]+, norm_edit_dis: [0-9.]+, fps: [0-9.e+]+", format_cur_metric(cur))
