"""benchmarks/det_eval_vs_ppdet.py at tiny scale: it runs both sides on the same batches and both give the same
detections (the timing figures are reported, never asserted)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_eval_bench_runs_and_both_sides_agree(tmp_path):
    pytest.importorskip("ppdet", reason="paddledet not installed (.ci/setup_test_env.sh installs it)")
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "det_eval_vs_ppdet.py"), "--size", "tiny",
                           "--images", "4", "--batch", "2", "--repeats", "1", "--px", "160", "--out", str(tmp_path / "out"),
                           "--data", str(tmp_path / "data")], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    # two implementations of one network: outputs agree to float32 rounding (1.2e-4 px seen at size s, 640 px)
    assert report["same_counts"] is True and report["max_abs_diff_detections"] < 1e-3
    assert min(n for pair in report["detections_per_image_ours_ppdet"] for n in pair) > 0  # boxes were compared
    assert set(report["ratio_ours_over_ppdet"]) == {"fwd_nms", "nms"}
    assert len(report["per_batch_seconds"]["ours_nms"]) == len(report["per_batch_seconds"]["ppdet_nms"]) == 2
