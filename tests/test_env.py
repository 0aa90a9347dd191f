"""Tests for paddle_recipes.runtime.env (CLI + advice rules)."""
from __future__ import annotations

import copy
import json

import paddle

from paddle_recipes.runtime.env import advise, collect_env, format_report
from conftest import run_python


def test_env_json_cli_has_keys():
    proc = run_python(["-m", "paddle_recipes.runtime.env", "--json", "--no-run-check"], timeout=300,
                      env={"FLAGS_cudnn_deterministic": "1", "PADDLE_TRAINERS_NUM": "2", "PADDLE_TRAINER_ID": "1"})
    info = json.loads(proc.stdout)
    for key in ("python", "paddle", "devices", "distributed", "cpu_count", "shm", "packages", "amp", "advice"):
        assert key in info, key
    assert info["paddle"]["version"] == paddle.__version__
    assert info["paddle"]["commit"] == paddle.version.commit
    assert info["paddle"]["compiled_with_cuda"] == paddle.is_compiled_with_cuda()
    assert info["devices"]["gpu_count"] == (paddle.device.cuda.device_count() if paddle.is_compiled_with_cuda() else 0)
    assert info["distributed"]["world_size"] == 2 and info["distributed"]["rank"] == 1
    assert info["flags"]["FLAGS_cudnn_deterministic"] == "1"
    assert info["packages"]["numpy"] and info["packages"]["albumentations"]
    assert "run_check" not in info
    if not paddle.is_compiled_with_cuda():
        assert info["paddle"]["cuda_version"] is None and info["amp"]["float16"] is False
        assert any("CPU build" in a for a in info["advice"])


def test_env_text_cli_runs_run_check():
    proc = run_python(["-m", "paddle_recipes.runtime.env"], timeout=300)
    assert "paddle:" in proc.stdout and "/dev/shm:" in proc.stdout
    assert "run_check:         OK" in proc.stdout


def _gpu_info(**over):
    info = collect_env()
    info = copy.deepcopy(info)
    info["paddle"].update(compiled_with_cuda=True, cuda_version="12.6", cudnn_version="9.5.1")
    info["devices"].update(gpu_count=1, gpus=[{"id": 0, "name": "fake", "capability": "8.0"}],
                           nvidia_smi={"driver_version": "535.1", "driver_cuda_version": "12.2"})
    info["cudnn_libs"] = []
    info["shm"] = {"total_mb": 64, "free_mb": 64}
    info["flags"] = {}
    for k, v in over.items():
        info[k] = v
    return info


def test_advice_rules_on_synthetic_gpu_env():
    adv = "\n".join(advise(_gpu_info()))
    assert "driver supports CUDA 12.2 but paddle was built for CUDA 12.6" in adv
    assert "libcudnn.so not found" in adv and "LD_LIBRARY_PATH" in adv
    assert "FLAGS_cudnn_deterministic=1" in adv
    assert "FLAGS_conv_workspace_size_limit" in adv and "batch size" in adv
    assert "--shm-size" in adv
    ok = _gpu_info(cudnn_libs=["/usr/lib/libcudnn.so.9"], shm={"total_mb": 8192, "free_mb": 8000})
    ok["devices"]["nvidia_smi"]["driver_cuda_version"] = "12.8"
    adv_ok = "\n".join(advise(ok))
    assert "driver supports" not in adv_ok and "libcudnn" not in adv_ok and "--shm-size" not in adv_ok
    assert "CPU build" not in adv_ok
    report = format_report(ok)
    assert "advice:" in report and "gpu 0: fake" in report
