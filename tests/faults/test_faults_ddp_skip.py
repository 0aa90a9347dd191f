"""Fault suite: batches with no readable sample in a 2-process run (issue 21 item 2).

Batch 1, no shuffle: rank r reads the samples i with i % 2 == r. The zero-loss step of a batch with no
readable sample used to skip the DataParallel forward (it summed model.parameters() * 0), and the ranks'
all-reduces fell out of step: gloo `EnforceNotMet ... 140928 vs 8`, launcher rc 250 (reproduced here with
"both_ranks" before the fix). Now it runs a zero-image forward through the wrapped model (tasks.ocr.step.
zero_loss), so every rank joins the same collectives. Detection and ERNIE have no zero-loss path: an
unreadable det image is a one-line DataError (test_faults_checkpoint) and the ERNIE data is generated in memory.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from PIL import Image

from conftest import REPO_ROOT, _clean_env

BAD = {  # which of 16 samples are unreadable
    "both_ranks": lambda i: i >= 2,  # each rank: its first sample, then 7 unreadable ones (the pattern)
    "one_rank": lambda i: i % 2 == 1 and i not in (1, 9),  # rank 1 only: 6 of its 8; rank 0 all readable
}


@pytest.mark.parametrize("case", ["both_ranks", "one_rank"])
def test_ocr_rec_unreadable_batches_keep_ranks_in_step(tmp_path, case):
    d = tmp_path / "data"
    d.mkdir()
    lines = []
    for i in range(16):
        if BAD[case](i):
            (d / f"{i}.jpg").write_bytes(b"\xff\xd8 not really a jpeg " + bytes([i]))
        else:
            Image.new("RGB", (96, 32), (255, 255, 255 - i)).save(d / f"{i}.jpg")
        lines.append(f"{i}.jpg\t啊阿")
    (d / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (d / "val.txt").write_text("\n".join(lines[:2]) + "\n", encoding="utf-8")
    ds = ["format=label_file", f"data_dir={d}"]
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", "2", "--log_dir", str(tmp_path / "log"),
           str(REPO_ROOT / "recipes" / "ocr_rec.py"), "-c", str(REPO_ROOT / "recipes" / "configs" / "ocr_rec_smoke.yml"),
           "-o", f"Global.output_dir={out}", "Global.epochs=2", "Train.loader.batch_size_per_card=1",
           "Train.loader.shuffle=false", "Global.log_every=4",
           *[f"Train.dataset.{x}" for x in ds], f"Train.dataset.label_file_list=[{d / 'train.txt'}]",
           *[f"Eval.dataset.{x}" for x in ds], f"Eval.dataset.label_file_list=[{d / 'val.txt'}]"]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=_clean_env(), capture_output=True, text=True, timeout=600)
    logs = "".join((tmp_path / "log" / f"workerlog.{r}").read_text(errors="replace") for r in (0, 1))
    assert proc.returncode == 0, logs[-6000:]
    for bad in ("EnforceNotMet", "Traceback", "Termination signal"):
        assert bad not in logs, bad
    summary = json.loads((out / "summary.json").read_text())
    assert summary["global_step"] == 16, summary  # 8 steps per epoch on both ranks, none lost
    n_bad = sum(map(BAD[case], range(16)))
    assert summary["skipped"]["Train.dataset"]["corrupt_image"] == n_bad, summary["skipped"]  # each counted once
