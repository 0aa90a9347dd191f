"""recipes/ernie_multitask.py: the 16-task tiny run (teacher, student, distill, INT8) on 1 and 2 processes."""
import json

import numpy as np
import pytest

from conftest import run_launch, run_python

SMOKE = "recipes/configs/ernie_multitask_smoke.yml"


def _check_report(out_dir, world_size):
    report = json.loads((out_dir / "report.json").read_text(encoding="utf-8"))
    assert report["world_size"] == world_size
    assert len(report["tasks"]) == 16
    eval_size = report["config"]["Data"]["eval_size"]
    for phase in ("teacher", "student_alone", "distill"):
        m = report[phase]
        primary = []
        for task, kind in report["tasks"].items():        # per-task metrics for all 16 tasks
            primary.append(m[f"{task}/f1"] if kind == "token_cls" else m[f"{task}/acc"])
            if kind != "token_cls":                       # sentence accuracy: whole examples out of eval_size
                assert m[f"{task}/acc"] * eval_size == pytest.approx(round(m[f"{task}/acc"] * eval_size), abs=1e-9)
        assert m["avg_score"] == pytest.approx(float(np.mean(primary)), rel=1e-12)  # mean of the primaries
    assert report["student_params"] < report["teacher_params"]
    q = report["quant"]
    assert q["int8_bytes"] < q["fp32_bytes"] and (out_dir / "quant" / "student_int8.npz").is_file()
    assert q["size_ratio"] == pytest.approx(q["int8_bytes"] / q["fp32_bytes"], rel=1e-12)
    # the quant phase re-scores the distilled fp32 student (no EMA in the smoke preset): the same weights
    assert q["fp32_avg_score"] == report["distill"]["avg_score"]
    assert q["accuracy_delta"] == pytest.approx(q["int8_avg_score"] - q["fp32_avg_score"], abs=1e-12)
    log = (out_dir / "train.log").read_text(encoding="utf-8")
    for key in ("reader_cost", "batch_cost", "ips", "kd_loss", "temperature", "t15_topic_cls_loss", "t02_ner_tag/f1"):
        assert key in log, key
    return report


def test_16_task_run_single_process(tmp_path):
    out = tmp_path / "run1"
    run_python(["recipes/ernie_multitask.py", "-c", SMOKE, "-o", f"Global.output_dir={out}"], timeout=300)
    _check_report(out, 1)


@pytest.mark.slow  # 10 s; DDP itself is in test_distributed.py; CI runs -m slow too
def test_16_task_run_two_processes(tmp_path):
    out = tmp_path / "run2"
    run_launch("recipes/ernie_multitask.py", ["-c", SMOKE, "-o", f"Global.output_dir={out}",
                                             "Train.sampling.strategy=temperature"], nproc=2,
               log_dir=tmp_path / "logs", timeout=400)
    _check_report(out, 2)
    r0 = json.loads((out / "checksums_rank0.json").read_text())
    r1 = json.loads((out / "checksums_rank1.json").read_text())
    assert set(r0) == {"teacher", "student_alone", "distill"}
    assert r0 == pytest.approx(r1, rel=1e-9)   # DDP kept both ranks' weights identical in every phase


def _recipe_module():
    from paddle_recipes.recipes import ernie_multitask

    return ernie_multitask


def test_bad_config_is_named():
    from paddle_recipes.config import ConfigError

    recipe = _recipe_module()
    with pytest.raises(ConfigError, match=r"Global\.epoch.*epochs"):
        recipe.main(["-c", SMOKE, "-o", "Global.epoch=2"])
    with pytest.raises(ConfigError, match="Train.sampling.strategy: unknown name 'uniformish'; valid names: .*round_robin"):
        recipe.main(["-c", SMOKE, "-o", "Train.sampling.strategy=uniformish"])
    with pytest.raises(ValueError, match="Global.phases"):
        recipe.main(["-c", SMOKE, "-o", "Global.phases=[teacher,finetune]"])
