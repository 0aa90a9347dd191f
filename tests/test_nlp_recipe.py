"""recipes/ernie_multitask.py: the 16-task tiny run (teacher, student, distill, INT8) on 1 and 2 processes."""
import json
import sys

import pytest

from conftest import run_launch, run_python

SMOKE = "recipes/configs/ernie_multitask_smoke.yml"


def _check_report(out_dir, world_size):
    report = json.loads((out_dir / "report.json").read_text(encoding="utf-8"))
    assert report["world_size"] == world_size
    assert len(report["tasks"]) == 16
    for phase in ("teacher", "student_alone", "distill"):
        m = report[phase]
        for task, kind in report["tasks"].items():        # per-task metrics for all 16 tasks
            assert 0.0 <= m[f"{task}/acc"] <= 1.0
            if kind == "token_cls":
                assert 0.0 <= m[f"{task}/f1"] <= 1.0
        assert 0.0 < m["avg_score"] <= 1.0
    assert report["student_params"] < report["teacher_params"]
    q = report["quant"]
    assert q["int8_bytes"] < q["fp32_bytes"] and (out_dir / "quant" / "student_int8.npz").is_file()
    assert 0.0 <= q["prediction_agreement"] <= 1.0
    log = (out_dir / "train.log").read_text(encoding="utf-8")
    for key in ("reader_cost", "batch_cost", "ips", "kd_loss", "temperature", "t15_topic_cls_loss", "t02_ner_tag/f1"):
        assert key in log, key
    return report


def test_16_task_run_single_process(tmp_path):
    out = tmp_path / "run1"
    run_python(["recipes/ernie_multitask.py", "-c", SMOKE, "-o", f"Global.output_dir={out}"], timeout=300)
    _check_report(out, 1)


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
