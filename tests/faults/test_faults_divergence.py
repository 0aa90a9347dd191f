"""Fault suite: a diverging run stops (issue 21 item 6).

`Optimizer.name=sgd Optimizer.lr=10` drives BatchNorm variances to inf while the loss stays finite: the
run used to go on, refuse every later checkpoint, log a `best_epoch` and exit 0. Now the first non-finite
weight or buffer (checked every log_every steps and before every save, on every rank) stops it in one line,
exit 2, with the last finite checkpoint as `latest`.
"""
from __future__ import annotations

import re

import numpy as np

from conftest import REPO_ROOT, run_cli
from paddle_recipes.checkpoint.format import first_nonfinite, load_checkpoint
from paddle_recipes.recipes.ocr_rec import OcrRec

OCR_SMOKE = REPO_ROOT / "recipes" / "configs" / "ocr_rec_smoke.yml"


def test_bn_variance_inf_stops_the_run_and_keeps_last_finite_latest(tmp_path, capsys):
    out = tmp_path / "out"
    code, err = run_cli(OcrRec, ["-c", str(OCR_SMOKE), "-o", f"Global.output_dir={out}",
                                 f"Synthetic.root={tmp_path / 'synth'}", "Synthetic.num_heldout=0", "Optimizer.name=sgd",
                                 "Optimizer.lr=10", "Global.epochs=6", "Global.save_every_epochs=1",
                                 "Global.log_every=1"], capsys)
    assert code == 2
    errors = [ln for ln in err.splitlines() if ln.startswith("ocr_rec:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    m = re.fullmatch(r"ocr_rec: error: training diverged: model tensor '(\S+)' holds inf/nan at global_step (\d+); "
                     r"the last finite checkpoint \((step_\d+)\) stays latest; lower Optimizer.lr", errors[0])
    assert m, errors[0]
    kept = m.group(3)
    assert (out / "checkpoints" / "latest").read_text().strip() == kept
    state = load_checkpoint(out / "checkpoints")
    assert first_nonfinite(state["model"]) is None and first_nonfinite(state["ema"]) is None
    assert state["global_step"] < int(m.group(2))
    assert not (out / "summary.json").exists()  # no "finished" report for a diverged run
    assert np.isfinite(state["model"][m.group(1)].numpy()).all()  # the tensor that blew up, still finite there
