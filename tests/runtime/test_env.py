"""Tests for paddle_recipes.runtime.env (CLI + advice rules)."""
from __future__ import annotations

import copy
import json
import sys

import paddle
import pytest

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
    assert info["packages"]["numpy"] and info["packages"]["opencv"]  # albumentations is the extra aug
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


# ------------------------------------------------------------------ the user's paddle and cv2 (pyproject leaves both)
# runs a script with the named top-level modules made impossible to import (as if not installed)
_WITHOUT = ("import sys, importlib.abc, runpy\n"
            "GONE = sys.argv[1].split(',')\n"
            "class Without(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in GONE:\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
            "sys.meta_path.insert(0, Without())\n"
            "sys.argv = sys.argv[2:]\n"
            "runpy.run_path(sys.argv[0], run_name='__main__')\n")


@pytest.mark.parametrize("missing", ["paddle", "cv2", "paddle,cv2"])
def test_missing_paddle_or_opencv_is_one_line_exit_2(missing):
    """pyproject.toml depends on neither (extras cpu / cv); a recipe started without them says what to install."""
    proc = run_python(["-c", _WITHOUT, missing, "recipes/ocr_rec.py", "--mode", "eval"], check=False, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("paddle_recipes: error: "), proc.stderr
    said = {"paddle": 'PaddlePaddle is not installed (no module paddle): pip install -e ".[cpu]"',
            "cv2": 'OpenCV is not installed (no module cv2): pip install -e ".[cv]"'}
    assert all((said[m] in lines[0]) == (m in missing.split(",")) for m in said), lines[0]


def test_missing_albumentations_names_the_setting(monkeypatch):
    """albumentations is the extra `aug` (it requires opencv-python-headless, a second cv2 beside paddlex's): asking
    for augmentation without it is a user error naming the key (one line through cli.USER_ERRORS)."""
    from paddle_recipes import MissingDependencyError
    from paddle_recipes.cli import USER_ERRORS
    from paddle_recipes.tasks.det_ppyoloe.coco import build_train_augment
    from paddle_recipes.tasks.ocr_rec.augment import build_augment

    monkeypatch.setitem(sys.modules, "albumentations", None)  # `import albumentations` raises ImportError
    for build, key in ((build_augment, "Train.dataset.aug"), (build_train_augment, "Train.augment")):
        with pytest.raises(MissingDependencyError) as e:
            build()
        assert str(e.value).startswith(f"{key}: augmentation needs albumentations") and "\n" not in str(e.value)
        assert 'pip install -e ".[aug]"' in str(e.value) and str(e.value).endswith(f"set {key.split('.')[-1]}: false")
    assert MissingDependencyError in USER_ERRORS


def test_two_distributions_of_one_module_are_advised():
    info = collect_env()
    one = {"cv2": {"opencv-python-headless": "5.1.0.95"}, "paddle": {"paddlepaddle": "3.3.1"}}
    assert not [a for a in advise({**info, "module_distributions": one}) if "distributions install" in a]
    two = {**one, "cv2": {"opencv-python-headless": "5.1.0.95", "opencv-contrib-python": "4.10.0.84"}}
    lines = [a for a in advise({**info, "module_distributions": two}) if "distributions install" in a]
    assert lines == [lines[0]] and lines[0].startswith("2 distributions install the module cv2 (opencv-python-headless"
                                                       "==5.1.0.95, opencv-contrib-python==4.10.0.84)")
    assert set(info["module_distributions"]) == {"cv2", "paddle"} and info["module_distributions"]["paddle"]


# distributions the user picks (a CPU or GPU paddle, one OpenCV): the package must never install one itself
USER_OWNED = {"paddlepaddle", "paddlepaddle-gpu", "albumentations", "opencv-python", "opencv-python-headless",
              "opencv-contrib-python", "opencv-contrib-python-headless"}


def test_pyproject_leaves_paddle_and_opencv_to_the_user():
    """No paddle, no cv2 distribution and nothing that requires one (albumentations requires opencv-python-headless)
    in the base dependencies; `all` (README command 1) brings the CPU wheel and OpenCV, `full` (GPU) no paddle."""
    import re
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]

    def names(reqs, seen=()):
        out = set()
        for r in reqs:
            m = re.fullmatch(r"paddle-recipes\[(.+)\]", r)
            if m:
                for e in m.group(1).split(","):
                    out |= names(extras[e], seen + (e,)) if e not in seen else set()
            else:
                out.add(re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower())
        return out

    assert not names(project["dependencies"]) & USER_OWNED
    assert {"paddlepaddle", "opencv-python-headless", "albumentations"} <= names(extras["all"])
    assert "paddlepaddle" not in names(extras["full"]) and "opencv-python-headless" in names(extras["full"])


def _pip_dry_run(python: str, *extra: str) -> set:
    """The distributions ``pip install -e <repo>`` would install with ``python`` (pip's --dry-run --report; needs
    PyPI), lower-case names; skips when the index cannot be reached."""
    import subprocess
    import tempfile
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        out = subprocess.run([python, "-m", "pip", "install", "--dry-run", "--quiet", "--report", str(report), *extra,
                              "-e", str(repo)], capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            if "connection" in out.stderr.lower() or "could not find a version" in out.stderr.lower():
                pytest.skip(f"PyPI not reachable: {out.stderr.strip().splitlines()[-1]}")
            raise AssertionError(out.stderr[-2000:])
        return {i["metadata"]["name"].lower() for i in json.loads(report.read_text())["install"]}


@pytest.mark.slow  # ~20 s each (pip resolves against PyPI)
def test_pip_install_keeps_the_users_paddle_and_opencv():
    """A GPU user's `pip install paddlepaddle-gpu && pip install -e .`: nothing of the package's closure, resolved
    as into an empty environment, is a paddle or an OpenCV wheel. A paddleocr 3.7 user's `pip install -e .` in its
    venv (paddlex's opencv-contrib 4.10, paddle 3.3.1) adds no paddle, no cv2, and the venv's `pip check` stays clean."""
    import subprocess

    from benchmarks.harness.official_system import VENV3

    empty = _pip_dry_run(sys.executable, "--ignore-installed")
    assert "paddle-recipes" in empty and not empty & USER_OWNED, sorted(empty)
    if not VENV3.exists():
        pytest.skip(f"paddleocr 3.7 side venv not found: {VENV3}")
    beside = _pip_dry_run(str(VENV3))
    assert "paddle-recipes" in beside and not beside & USER_OWNED, sorted(beside)
    check = subprocess.run([str(VENV3), "-m", "pip", "check"], capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout
