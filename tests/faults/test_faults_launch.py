"""Fault suite: errors under the 2-process launcher are one line per rank, launcher exit 2 (issue 21 item 7).

Before: a rank-0-only error (the output-dir lock) left rank 1 in its first collective until gloo timed out
(a traceback), and an error raised after init_parallel_env ended in a C++ termination dump on the other rank.
"""
from __future__ import annotations

import subprocess
import sys

from conftest import REPO_ROOT, _clean_env
from paddle_recipes.checkpoint.rundir import OutputLock

SMOKE = REPO_ROOT / "recipes" / "configs" / "ocr_rec_smoke.yml"
DUMPS = ("Traceback", "Termination signal", "terminate called", "EnforceNotMet", "C++ Traceback")


def _launch(tmp_path, *opts) -> tuple[int, list[str]]:
    cmd = [sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", "2", "--log_dir", str(tmp_path / "log"),
           str(REPO_ROOT / "recipes" / "ocr_rec.py"), "-c", str(SMOKE), "-o", f"Synthetic.root={tmp_path / 'synth'}",
           "Synthetic.num_train=16", "Synthetic.num_val=4", "Synthetic.num_heldout=0", *opts]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=_clean_env(), capture_output=True, text=True, timeout=300)
    logs = [(tmp_path / "log" / f"workerlog.{r}").read_text(errors="replace") for r in (0, 1)]
    for log in logs:
        for bad in DUMPS:
            assert bad not in log, log[-3000:]
    return proc.returncode, [[ln for ln in log.splitlines() if ln.startswith("ocr_rec:")] for log in logs]


def test_rank0_only_error_stops_both_ranks_in_one_line(tmp_path):
    out = tmp_path / "out"
    with OutputLock(out):  # another run holds the output dir: only rank 0 takes the lock
        rc, lines = _launch(tmp_path, f"Global.output_dir={out}")
    assert rc == 2
    assert len(lines[0]) == 1 and lines[0][0].startswith(f"ocr_rec: error: output dir {out} is in use by pid")
    assert lines[1] == [f"ocr_rec: error: locking the output dir {out} failed on 1 other rank(s); see their error line"]
    assert not (out / "config.yml").exists() and not (out / "train.log").exists()


def test_error_after_init_is_one_line_per_rank(tmp_path):
    (tmp_path / "empty.txt").write_text("")
    rc, lines = _launch(tmp_path, f"Global.output_dir={tmp_path / 'out'}", f"Train.dataset.data_dir={tmp_path}",
                        f"Train.dataset.label_file_list=[{tmp_path / 'empty.txt'}]")
    assert rc == 2
    want = (f"ocr_rec: error: Train.dataset: no usable samples in {tmp_path / 'empty.txt'} (Train.dataset: no samples "
            "skipped); check data_dir / label files and the character dict")
    assert lines == [[want], [want]]
