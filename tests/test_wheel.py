"""The built wheel is enough to run a recipe: build it, install it (no deps) into a fresh virtualenv that
sees the system packages (paddle etc.), and run the OCR smoke recipe from a directory outside the checkout
with the documented relative paths (config, char dict), then export it with Paddle Inference parity.
The wheel is built with build isolation (pip fetches setuptools>=68 and wheel from the package index once)."""
from __future__ import annotations

import pytest

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _run(cmd, cwd, env, timeout=600):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    return proc


def _copy_source_tree(repo: Path, dst: Path) -> None:
    """The files a clean clone has (git's tracked and not-ignored ones), not the side venvs the CI setup
    makes in the checkout (3 GB) nor outputs; without git, everything but those."""
    try:
        git = ["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
        listed = subprocess.run(git, capture_output=True, check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        shutil.copytree(repo, dst, symlinks=True, ignore=shutil.ignore_patterns(
            ".git", ".venv*", "output", "cache", "build", "*.egg-info", "__pycache__", ".pytest_cache"))
        return
    for rel in filter(None, listed):
        if (repo / rel).is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / rel, dst / rel, follow_symlinks=False)


@pytest.mark.slow  # ~15 s: builds a wheel and a venv; the CI script runs it (`pytest -q -m slow`)
def test_wheel_installs_and_runs_the_ocr_smoke_recipe_outside_the_checkout(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(OMP_NUM_THREADS="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    src = tmp_path / "src"  # build from a copy: setuptools writes build/ and *.egg-info into the source tree
    _copy_source_tree(REPO, src)
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, src],
         cwd=tmp_path, env=env)
    (wheel,) = wheels.glob("paddle_recipes-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("paddle_recipes/recipes/ocr_rec.py", "paddle_recipes/configs/ocr_rec_smoke.yml",
                   "paddle_recipes/assets/ocr_rec/ch_common_3000.txt", "paddle_recipes/assets/ocr_rec/char_freq.txt",
                   "paddle_recipes/assets/nlp/vocab.txt"):
        assert needed in names, needed

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", venv], cwd=tmp_path, env=env)
    py = venv / "bin" / "python"
    _run([py, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", wheel], cwd=tmp_path, env=env)
    work = tmp_path / "elsewhere"
    work.mkdir()
    where = _run([py, "-c", "import paddle_recipes, sys; print(paddle_recipes.__file__)"], cwd=work, env=env)
    assert where.stdout.strip().startswith(str(venv)), where.stdout  # the wheel, not a checkout

    opts = ["Global.output_dir=out", "Global.epochs=1", "Global.log_every=1", "Synthetic.root=synth",
            "Synthetic.num_train=32", "Synthetic.num_val=8"]
    train = _run([venv / "bin" / "paddle-recipes-ocr-rec", "-c", "recipes/configs/ocr_rec_smoke.yml", "-o", *opts],
                 cwd=work, env=env)
    summary = json.loads((work / "out" / "summary.json").read_text())
    assert summary["global_step"] == 2 and summary["final_eval"]["num_samples"] == 8
    # the font files of datasets/fonts/ are not package data: the Noto PyPI faces render, the held-out split is skipped
    log = train.stdout + train.stderr
    assert "rendering with the 2 found" in log and "no eval font file is installed" in log
    assert "heldout_acc" not in summary["final_eval"]
    assert set(summary["final_eval"]["val"]["per_tag"]) <= {"noto_sans_sc", "noto_sans_mono_sc"}
    assert summary["config"]["Global"]["character_dict_path"] == "datasets/ocr_rec/ch_common_3000.txt"
    exp = _run([venv / "bin" / "paddle-recipes", "ocr_rec", "-c", "recipes/configs/ocr_rec_smoke.yml", "--mode",
                "export", "-o", *opts], cwd=work, env=env)
    report = json.loads(exp.stdout.strip().splitlines()[-1])
    assert report["max_abs_diff"] <= 1e-4 and report["same_decoded_text"] is True
    assert (work / "out" / "inference" / "inference.pdiparams").is_file()  # PaddleOCR's inference layout
