"""Multi-node runs on loopback (issue 21): two `paddle.distributed.launch --nnodes 2 --master HOST:PORT --rank R`
launchers of 1 process each are the same job as one launcher of 2 processes, and losing one node ends the
other in one line within seconds (it then resumes from `latest`, README "Several machines")."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np

from conftest import REPO_ROOT, _clean_env, run_launch

DDP_SCRIPT = REPO_ROOT / "tests" / "scripts" / "ddp_equiv.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node(rank: int, port: int, log_dir, args) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "paddle.distributed.launch", "--nnodes", "2", "--master", f"127.0.0.1:{port}",
           "--rank", str(rank), "--nproc_per_node", "1", "--log_dir", str(log_dir), *map(str, args)]
    return subprocess.Popen(cmd, cwd=REPO_ROOT, env=_clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def test_two_loopback_nodes_equal_one_node_two_processes(tmp_path):
    args = [DDP_SCRIPT, "--batch-size", 8, "--steps", 3]
    run_launch(args[0], [*args[1:], "--out", tmp_path / "one_node"], nproc=2, log_dir=tmp_path / "log_one")
    port = _free_port()
    nodes = [_node(r, port, tmp_path / f"log_node{r}", [*args, "--out", tmp_path / "two_nodes"]) for r in (0, 1)]
    outs = [n.communicate(timeout=300)[0] for n in nodes]
    assert [n.returncode for n in nodes] == [0, 0], outs[0][-3000:] + outs[1][-3000:]
    one, two = np.load(tmp_path / "one_node" / "params.npz"), np.load(tmp_path / "two_nodes" / "params.npz")
    assert sorted(one.files) == sorted(two.files)
    for k in one.files:
        np.testing.assert_array_equal(one[k], two[k])  # the same job: same ranks, same all-reduces


def test_losing_a_node_ends_the_other_in_one_line(tmp_path):
    port = _free_port()
    common = [REPO_ROOT / "recipes" / "ocr_rec.py", "-c", REPO_ROOT / "recipes" / "configs" / "ocr_rec_smoke.yml",
              "-o", f"Synthetic.root={tmp_path / 'synth'}", "Synthetic.num_train=32", "Synthetic.num_val=4",
              "Synthetic.num_heldout=0", "Global.epochs=200", "Global.eval_every_epochs=0",
              "Train.loader.batch_size_per_card=4"]
    nodes = [_node(r, port, tmp_path / f"log{r}", [*common, f"Global.output_dir={tmp_path / f'out{r}'}"]) for r in (0, 1)]
    log0 = tmp_path / "log0" / "workerlog.0"
    try:
        deadline = time.time() + 240
        while time.time() < deadline and not (log0.exists() and "saved checkpoint" in log0.read_text(errors="replace")):
            time.sleep(0.2)
        assert "saved checkpoint" in log0.read_text(errors="replace"), "node 0 did not train an epoch"
        os.killpg(nodes[1].pid, signal.SIGKILL)  # node 1's launcher; its rank follows (parent-death signal)
        t0 = time.time()
        out0 = nodes[0].communicate(timeout=120)[0]
        took = time.time() - t0
    finally:
        for n in nodes:
            try:
                os.killpg(n.pid, signal.SIGKILL)
            except OSError:
                pass
            n.wait()
    assert took < 60, f"node 0 took {took:.0f} s to notice"
    assert nodes[0].returncode != 0
    text = log0.read_text(errors="replace")
    assert "Traceback" not in text and "FatalError" not in text, text[-3000:]  # no Python or paddle C++ dump
    errors = [ln for ln in text.splitlines() if ln.startswith("ocr_rec:")]
    # Where node 0 notices decides the form: in a Python collective, our one line (exit 143); inside
    # DataParallel's backward hook, paddle's C++ code calls std::terminate, which no Python handler can
    # intercept: libstdc++'s two lines naming the peer, then the default abort (README "Several machines").
    if errors:
        assert len(errors) == 1 and errors[0].startswith(
            "ocr_rec: error: rank 0 stopped: another rank failed or was stopped ("), errors
    else:
        tail = text[text.index("terminate called"):].strip().splitlines()
        assert len(tail) == 2 and "gloo::" in tail[0] and "[127.0.0.1]:" in tail[1], text[-3000:]
    assert (tmp_path / "out0" / "checkpoints" / "latest").exists()  # what the restarted job resumes from
