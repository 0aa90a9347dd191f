"""Shared test helpers.

`run_launch` runs a script under `python -m paddle.distributed.launch` (GLOO on CPU)
and fails with the workers' logs when a rank fails.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# Tests live in tests/<area>/ (train, weights, ocr_rec, ...) and import helpers from one another by module name
# (e.g. `from test_paddleocr_recipe import run`): every area folder is importable, as tests/ itself is.
for _area in sorted(p for p in Path(__file__).resolve().parent.iterdir() if p.is_dir()):
    if any(_area.glob("test_*.py")) and str(_area) not in sys.path:
        sys.path.insert(0, str(_area))

# Every process this test session starts inherits this mark (through os.environ and _clean_env), so the
# session can find what it left behind: see pytest_sessionfinish.
SESSION_MARK = "PADDLE_RECIPES_TEST_SESSION"
# Under pytest-xdist each worker marks its own children (its own environ still holds the controller's mark), so a
# worker that finishes first never takes a sibling worker for a left-over process.
if os.environ.get("PYTEST_XDIST_WORKER") or SESSION_MARK not in os.environ:
    os.environ[SESSION_MARK] = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")  # live as long as pytest itself


def session_processes() -> dict[int, str]:
    """{pid: command line} of live (not zombie) processes other than this one that carry this session's mark."""
    mark = f"{SESSION_MARK}={os.environ[SESSION_MARK]}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if mark not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read().rsplit(")", 1)[-1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if stat[0] == "Z" or (int(stat[1]) == os.getpid() and any(h in cmd for h in _HELPERS)):
            continue
        found[int(entry)] = cmd
    return found


# An xdist worker that ends in os._exit (a SIGTERM handler, a watchdog, a rank's exit path) during a test dies
# silently: pytest has captured its stderr, xdist says only "node down: Not properly terminated". Each such exit of
# the worker process itself is written, with the test and the stack, to this file; the controller prints it.
def _worker_exits_file() -> Path:
    """The controller's file (named by its pid: a worker's parent)."""
    controller = os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()
    return Path(os.environ.get("TMPDIR", "/tmp")) / f"paddle_recipes_test_exits_{controller}.log"


_running_test = ["(between tests)"]
if os.environ.get("PYTEST_XDIST_WORKER"):
    WORKER_EXITS = _worker_exits_file()
    _worker_pid, _real_exit = os.getpid(), os._exit

    def _logged_exit(code):
        # not a forked loader worker; not after the worker's session ended (its results are in: execnet SIGINTs a
        # worker whose teardown takes over 5 s, and a test's SIGINT handler may then leave with os._exit)
        if os.getpid() == _worker_pid and _running_test[0] is not None:
            import traceback

            with open(WORKER_EXITS, "a") as f:
                f.write(f"{os.environ['PYTEST_XDIST_WORKER']} (pid {_worker_pid}) os._exit({code}) during "
                        f"{_running_test[0]}:\n{''.join(traceback.format_stack()[-10:-1])}\n")
        _real_exit(code)

    os._exit = _logged_exit


@contextlib.contextmanager
def hang_watchdog(seconds: float):
    """faulthandler.dump_traceback_later(seconds, exit=True) around the block, its stack dump reaching the run's
    output: under xdist it is appended to WORKER_EXITS, which the controller prints (a worker's stderr is captured
    and lost, and exit=True ends the worker with status 1); without xdist, to stderr."""
    import faulthandler

    with contextlib.ExitStack() as stack:
        out = stack.enter_context(open(WORKER_EXITS, "a")) if os.environ.get("PYTEST_XDIST_WORKER") else sys.stderr
        faulthandler.dump_traceback_later(seconds, exit=True, file=out)
        try:
            yield
        finally:
            faulthandler.cancel_dump_traceback_later()


@pytest.hookimpl(optionalhook=True)  # an xdist hook: pytest without xdist does not know it
def pytest_testnodedown(node, error):
    """Controller: when an xdist worker dies ("Not properly terminated"), say how: its exit status or signal."""
    if error is None:
        return
    import signal as _signal

    popen = getattr(getattr(node.gateway, "_io", None), "popen", None)
    try:
        rc = popen.wait(timeout=5) if popen is not None else None
    except Exception:  # noqa: BLE001 - a diagnostic only
        rc = None
    how = "unknown" if rc is None else f"killed by {_signal.Signals(-rc).name}" if rc < 0 else f"exit status {rc}"
    sys.stderr.write(f"\n[{node.gateway.id}] worker died: {how}\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _running_test[0] = item.nodeid
    yield
    _running_test[0] = f"(after {item.nodeid})"


def pytest_sessionfinish(session, exitstatus):
    """The suite leaves no process behind (issue 21 item 9): after a 10 s grace for ones still exiting, any
    process carrying this session's mark fails the run (exit status 1), is listed, and is killed. The controller
    also prints any os._exit of an xdist worker (WORKER_EXITS)."""
    _running_test[0] = None  # every test of this process has run (a later os._exit is not recorded)
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        exits = _worker_exits_file()
        text = exits.read_text() if exits.exists() else ""
        exits.unlink(missing_ok=True)
        if text:
            sys.stderr.write(f"\nERROR: xdist workers ended early (os._exit, or a hang_watchdog dump then exit 1):"
                             f"\n{text}")
            session.exitstatus = 1
    deadline = time.time() + 10
    left = session_processes()
    while left and time.time() < deadline:
        time.sleep(0.25)
        left = session_processes()
    if not left:
        return
    lines = [f"  pid {pid}: {cmd[:300]}" for pid, cmd in sorted(left.items())]
    sys.stderr.write(f"\nERROR: the test session left {len(left)} process(es) running (killed now):\n"
                     + "\n".join(lines) + "\n")
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    session.exitstatus = 1


def _clean_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    # Launch picks these up and would nest inside an outer launch.
    for key in list(env):
        if key.startswith(("PADDLE_TRAINER", "PADDLE_RANK", "PADDLE_LOCAL", "PADDLE_GLOBAL", "PADDLE_WORLD",
                           "PADDLE_CURRENT", "PADDLE_MASTER", "PADDLE_NNODES", "PADDLE_JOB")):
            env.pop(key)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("FLAGS_call_stack_level", "2")
    if extra:
        env.update({k: str(v) for k, v in extra.items()})
    return env


def run_launch(script: str | os.PathLike, args: list[str], nproc: int, log_dir: str | os.PathLike,
               timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `script args` on `nproc` local CPU ranks; raise AssertionError with logs on failure."""
    log_dir = Path(log_dir)
    cmd = [sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", str(nproc),
           "--log_dir", str(log_dir), str(script), *map(str, args)]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=_clean_env(env), capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        logs = []
        for f in sorted(log_dir.glob("*")):
            if f.is_file():
                logs.append(f"--- {f.name} ---\n" + f.read_text(errors="replace")[-4000:])
        failed = [ln for ln in proc.stderr.splitlines() if "Container rank" in ln or "Exit code" in ln]
        raise AssertionError(f"launch failed rc={proc.returncode}\n" + "\n".join(failed) + f"\ncmd: {' '.join(cmd)}\n"
                             f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}\n" + "\n".join(logs))
    return proc


def run_1_and_2_ranks(script: str | os.PathLike, out: Path, global_batch: int = 4) -> Path:
    """`script --global-batch B --out out/p<n>` once on 1 rank and once on 2 (logs in out/log<n>): the
    equivalence tests' pair of runs (same global batch, the script splits it over the ranks). Returns `out`."""
    for nproc in (1, 2):
        run_launch(script, ["--global-batch", global_batch, "--out", out / f"p{nproc}"], nproc=nproc,
                   log_dir=out / f"log{nproc}")
    return out


def run_python(args: list[str], timeout: float = 600, env: dict | None = None,
               check: bool = True) -> subprocess.CompletedProcess:
    """Run `python args...` from the repo root in a clean environment."""
    proc = subprocess.run([sys.executable, *map(str, args)], cwd=REPO_ROOT, env=_clean_env(env),
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"command failed rc={proc.returncode}: {args}\nstdout:\n{proc.stdout[-4000:]}\n"
                             f"stderr:\n{proc.stderr[-4000:]}")
    return proc


def fake_ppocr_checkout(root: Path, yaml_rel: str, yaml_text: str, trainer_src: str, ours_src: str
                        ) -> tuple[Path, Path]:
    """A fake PaddleOCR checkout under root (tools/train.py = trainer_src, ppocr/, the YAML at yaml_rel) and a fake
    recipe entry (ours_src) for the benchmark harness tests; returns (checkout, recipe script)."""
    src = root / "FakePaddleOCR"
    (src / "tools").mkdir(parents=True)
    (src / "ppocr").mkdir()
    (src / "tools" / "train.py").write_text(trainer_src)
    cfg = src / yaml_rel
    cfg.parent.mkdir(parents=True)
    cfg.write_text(yaml_text)
    ours = root / "fake_recipe.py"
    ours.write_text(ours_src)
    return src, ours


def sigterm_and_wait(proc: subprocess.Popen, timeout: float = 30) -> tuple[str, float]:
    """Send SIGTERM to `proc` (started with stderr=PIPE, text=True), wait for it to end: (its stderr, seconds
    it took). It is killed if still running after `timeout` s (communicate raises TimeoutExpired)."""
    try:
        proc.send_signal(signal.SIGTERM)
        t0 = time.time()
        _, err = proc.communicate(timeout=timeout)
        return err, time.time() - t0
    finally:
        proc.kill()
        proc.wait()


def run_cli(recipe, argv: list[str], capsys) -> tuple[int, str]:
    """Run ``recipe.cli(argv)`` in this process as `python recipes/x.py argv` would: (exit code, stderr).
    The recipe's log handlers (they write to this test's captured streams) are removed afterwards."""
    import logging

    try:
        with pytest.raises(SystemExit) as code:
            recipe.cli(argv)
    finally:
        root = logging.getLogger()
        for h in [h for h in root.handlers if getattr(h, "_paddle_recipes", False)]:
            root.removeHandler(h)
            h.close()
    return code.value.code, capsys.readouterr().err


# A small PP-OCRv4-style det network (PPLCNetV3 rep blocks and LABs, RSEFPN, DB head with biased transposed convs).
SMALL_DET_ARCH = {"Backbone": {"name": "PPLCNetV3", "scale": 0.35, "det": True},
                  "Neck": {"name": "RSEFPN", "out_channels": 16, "shortcut": True},
                  "Head": {"name": "DBHead", "k": 50}}


def needs_cxx(key: str):
    """pytest mark: skip the module when no C++ compiler can build the kernel behind Global.<key>."""
    import shutil

    return pytest.mark.skipif(not (shutil.which("c++") or shutil.which("g++")),
                              reason=f"no C++ compiler: Global.{key} cannot be built here")


def rel_err(a, b) -> float:
    """max |a - b| / max |a| (float64)."""
    import numpy as np

    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(a)), 1e-12))


def square_loss_grads(layers, x0) -> list:
    """For each layer (training mode): [y, dx, then each parameter's gradient] of sum(layer(x0) ** 2), as numpy."""
    import paddle

    out = []
    for layer in layers:
        layer.train()
        x = paddle.to_tensor(x0, stop_gradient=False)
        y = layer(x)
        (y * y).sum().backward()
        out.append([y.numpy(), x.grad.numpy()] + [p.grad.numpy() for p in layer.parameters()])
    return out


def db_loss_batches(steps: int, size: int = 64):
    """Fixed inputs for a DB det loss curve: `steps` random [2, 3, size, size] batches and one set of DBLoss
    targets (shrink map of one text bar, threshold map 0.5 on it, all-ones masks)."""
    import numpy as np
    import paddle

    rng = np.random.default_rng(0)
    shrink = np.zeros([2, size, size], np.float32)
    shrink[:, 20:30, 8:50] = 1.0
    maps = [paddle.to_tensor(m) for m in (0.5 * shrink, np.ones_like(shrink), shrink, np.ones_like(shrink))]
    batches = [paddle.to_tensor(rng.standard_normal([2, 3, size, size]).astype("float32")) for _ in range(steps)]
    return batches, maps


def det_loss_curve(arch: dict, steps: int = 4, nudge: bool = False, switch=None, to_static: bool = False):
    """(losses, model, switch's return) of `steps` Adam steps (lr 1e-3) of the PP-OCR det network `arch` on the
    db_loss_batches, from paddle.seed(0). nudge: every initial weight moved up by one float32 ulp (the float noise
    floor of a loss curve); switch(model) -> int: applied before training (a kernel switch), its result returned."""
    import numpy as np
    import paddle

    from paddle_recipes.train.to_static import apply_to_static
    from paddle_recipes.tasks.ocr_det.losses import DBLoss
    from paddle_recipes.tasks.ocr_det.models import build_ppocr_det_model

    batches, maps = db_loss_batches(steps)
    paddle.seed(0)
    model = build_ppocr_det_model(arch)
    for p in model.parameters() if nudge else ():
        p.set_value(np.nextafter(p.numpy(), np.float32(np.inf)).astype("float32"))
    n = switch(model) if switch else 0
    if to_static:
        apply_to_static(model)
    opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    loss_fn, losses = DBLoss(), []
    model.train()
    for x in batches:
        loss = loss_fn(model(x), [None, *maps])["loss"]
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    return losses, model, n


def det_fit(out_dir: Path, arch: dict, **global_keys):
    """(per-step losses, model) of one epoch of build_training (4 steps of 2 RandomImages, Adam lr 1e-3, constant,
    loss = mean squared "maps") of the PP-OCR det network `arch`, from paddle.seed(0); `global_keys` go into
    Global (e.g. cpu_depthwise_kernel=True)."""
    import paddle

    from paddle_recipes.config import from_dict
    from paddle_recipes.runtime.distributed import DistInfo
    from paddle_recipes.tasks.ocr_det.models import build_ppocr_det_model
    from paddle_recipes.train.build import build_training
    from paddle_recipes.train.config import TrainingConfig

    cfg = from_dict(TrainingConfig, {
        "Global": {"output_dir": str(out_dir), "epochs": 1, "log_every": 1, "seed": 0, "save_every_epochs": 0,
                   "eval_every_epochs": 0, **global_keys},
        "Optimizer": {"name": "adam", "lr": 0.001, "schedule": "constant"},
        "Train": {"loader": {"batch_size_per_card": 2, "shuffle": False}}})
    paddle.seed(0)
    model = build_ppocr_det_model(arch)
    run = build_training(cfg, model, RandomImages(), step=lambda m, x: {"loss": (m(x)["maps"] ** 2).mean()},
                         info=DistInfo())
    return [h["loss"] for h in run.fit()["history"]], model


class RandomImages:
    """A map-style dataset of n random 3 x size x size float32 images (at 32 x 32 a det network's deepest map is
    1 x 1: BatchNorm over 2 values turns an ulp into O(1), for paddle's own kernels too; hence 64)."""

    def __init__(self, n: int = 8, size: int = 64):
        import numpy as np

        self.x = np.random.default_rng(0).standard_normal((n, 3, size, size)).astype("float32")

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i]


def det_export_output_elsewhere(model, tmp_path: Path, size: int = 64):
    """jit.save `model` (eval mode, input [None, 3, size, size]) and run the saved file in a fresh Python process
    (one that never imported paddle_recipes nor built any of its kernels) on one random image:
    (this process's "maps" output, the other process's)."""
    import numpy as np
    import paddle

    model.eval()
    prefix = str(tmp_path / "inference")
    paddle.jit.save(model, prefix, input_spec=[paddle.static.InputSpec([None, 3, size, size], "float32")])
    x = np.random.default_rng(3).standard_normal([1, 3, size, size]).astype("float32")
    np.save(tmp_path / "x.npy", x)
    expected = model(paddle.to_tensor(x))["maps"].numpy()
    code = ("import sys, numpy as np, paddle\n"
            "m = paddle.jit.load(sys.argv[1]); m.eval()\n"
            "y = m(paddle.to_tensor(np.load(sys.argv[2])))\n"
            "y = y['maps'] if isinstance(y, dict) else (y[0] if isinstance(y, (list, tuple)) else y)\n"
            "np.save(sys.argv[3], y.numpy())\n")
    subprocess.run([sys.executable, "-c", code, prefix, str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
                   check=True, capture_output=True, timeout=300)
    return expected, np.load(tmp_path / "y.npy")


def worst_by_kind(a, b) -> dict:
    """max |a - b| / max |a| per kind of entry of two .npz files (the part of a key before "/": loss, grad, state,
    ...) over all its tensors; ``a`` is the reference (the cross-rank BN and DB loss equivalence tests)."""
    import numpy as np

    kinds: dict = {}
    for k in a.files:
        kind = k.split("/")[0]
        d, m = kinds.get(kind, (0.0, 0.0))
        kinds[kind] = (max(d, float(np.abs(a[k].astype("float64") - b[k]).max())), max(m, float(np.abs(a[k]).max())))
    return {kind: d / max(m, 1e-30) for kind, (d, m) in kinds.items()}


@pytest.fixture
def launch():
    return run_launch


@pytest.fixture(autouse=True)
def _seed():
    import random

    import numpy as np
    import paddle

    from paddle_recipes.data import loader

    random.seed(0)
    np.random.seed(0)
    paddle.seed(0)
    loader._SAMPLE.key = None  # a test that loaded keyed samples in this thread must not seed the next one's draws
    yield
