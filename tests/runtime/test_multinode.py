"""Multi-node runs on loopback: two `paddle.distributed.launch --nnodes 2 --master ... --rank R` launchers,
1 process each, train like one node with 2 processes; a lost node ends the other with one line (peers.py)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO_ROOT, _clean_env, run_launch
from paddle_recipes.runtime import peers

DDP_SCRIPT = REPO_ROOT / "tests" / "scripts" / "ddp_equiv.py"
SMOKE = REPO_ROOT / "recipes" / "configs" / "ocr_rec_smoke.yml"
SPOOF = b"lost node 7 (rank 7, host evil): injected\n"  # issue 37: this line ended a run
DUMPS = ("C++ Traceback", "terminate called", "TimeoutException", "Traceback (most recent call last)", "SIGABRT")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_nodes(tmp: Path, script_and_args: list, env: dict | None = None, nnodes: int = 2,
                 per_node: dict | None = None) -> list:
    """One launcher per node (own session, like separate machines), all on 127.0.0.1; per_node: rank ->
    extra script args."""
    port, procs = _free_port(), []
    tmp.mkdir(parents=True, exist_ok=True)
    for rank in range(nnodes):
        cmd = [sys.executable, "-m", "paddle.distributed.launch", "--nnodes", str(nnodes), "--master",
               f"127.0.0.1:{port}", "--rank", str(rank), "--nproc_per_node", "1", "--log_dir",
               str(tmp / f"log{rank}"), *map(str, script_and_args), *map(str, (per_node or {}).get(rank, []))]
        out = open(tmp / f"launcher{rank}.txt", "w")
        procs.append(subprocess.Popen(cmd, cwd=REPO_ROOT, env=_clean_env(env), stdout=out, stderr=subprocess.STDOUT,
                                      start_new_session=True))
    return procs


def _worker_log(tmp: Path, node: int) -> str:
    f = tmp / f"log{node}" / "workerlog.0"
    return f.read_text(errors="replace") if f.exists() else ""


def _wait_all(procs: list, tmp: Path, timeout: float) -> list[int]:
    deadline = time.time() + timeout
    try:
        return [p.wait(timeout=max(1, deadline - time.time())) for p in procs]
    except subprocess.TimeoutExpired:
        logs = "\n".join(f"--- node {n} ---\n{_worker_log(tmp, n)[-3000:]}" for n in range(len(procs)))
        raise AssertionError(f"nodes still running after {timeout} s\n{logs}") from None
    finally:
        _kill_all(procs)


def _kill_all(procs: list) -> None:
    for p in procs:  # the launcher's session; its workers run in their own sessions and follow within 1 s
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _wait_for(pred, timeout: float, what: str) -> None:
    deadline = time.time() + timeout
    while not pred():
        if time.time() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.3)


def _params(out: Path) -> list:
    data = np.load(out / "params.npz")
    return [data[k] for k in sorted(data.files, key=lambda s: int(s.split("_")[1]))]


def test_two_nodes_train_like_one_node_with_two_processes(tmp_path):
    """2 launchers x 1 process (--nnodes 2) end with the weights of 1 launcher x 2 processes bit for bit: the
    same ranks and the same all-reduces, so multi-node runs are the same data-parallel job."""
    args = ["--batch-size", 8, "--steps", 3]
    procs = _start_nodes(tmp_path / "mn", [DDP_SCRIPT, *args, "--out", tmp_path / "mn" / "out"])
    one = tmp_path / "one"
    run_launch(DDP_SCRIPT, [*args, "--out", one], nproc=2, log_dir=one / "log")
    assert _wait_all(procs, tmp_path / "mn", timeout=300) == [0, 0], _worker_log(tmp_path / "mn", 0)[-3000:]
    two = tmp_path / "mn" / "out"
    assert (two / "rank1.json").read_text().startswith('{"world_size": 2')
    diff = max(float(np.abs(a - b).max()) for a, b in zip(_params(one), _params(two)))
    assert diff == 0.0, diff


@pytest.mark.slow
def test_killing_a_node_stops_the_other_with_one_line_then_resume(tmp_path):
    """SIGKILL of node 1's launcher mid-training: node 0 stops within seconds with ONE line naming node 1 and
    where `latest` is, exit 3, no gloo abort dump (it was a gloo::TimeoutException C++ dump, rc -6). Then the
    same command on both nodes with Global.resume=auto continues from `latest` and finishes."""
    out = tmp_path / "out"
    recipe = [REPO_ROOT / "recipes" / "ocr_rec.py", "-c", SMOKE, "-o", f"Global.output_dir={out}"]
    procs = _start_nodes(tmp_path / "a", [*recipe, "Global.epochs=40"])
    try:
        _wait_for(lambda: "global_step: 4," in _worker_log(tmp_path / "a", 0), 240, "step 4 on node 0")
        os.killpg(procs[1].pid, signal.SIGKILL)
        t0 = time.time()
        rc0 = procs[0].wait(timeout=60)
        elapsed = time.time() - t0
    finally:
        _kill_all(procs)
    log0 = _worker_log(tmp_path / "a", 0)
    lost = [ln for ln in log0.splitlines() if "lost node" in ln]
    assert lost == [f"rank 0: lost node 1 (rank 1, host 127.0.0.1): its launcher is gone (killed?); stopping. "
                    f"The last checkpoint is {out / 'checkpoints' / 'latest'}: run the same command again on every "
                    "node with -o Global.resume=auto to continue from it"], log0[-3000:]
    assert rc0 == peers.PEER_LOST_EXIT and elapsed < 30, (rc0, elapsed)
    for dump in DUMPS:
        assert dump not in log0, dump
    latest = (out / "checkpoints" / "latest").read_text().strip()

    # node 1 without the checkpoints (a local disk that is not node 0's): both stop with one line, exit 2
    procs = _start_nodes(tmp_path / "c", [*recipe, "Global.epochs=4", "Global.resume=auto"],
                         per_node={1: [f"Global.output_dir={tmp_path / 'node1_disk'}"]})
    rcs = _wait_all(procs, tmp_path / "c", timeout=300)
    hint = ("find a different checkpoint than rank 0: every node must see the same {} (put Global.output_dir "
            "on storage all nodes share, or copy rank 0's checkpoints folder to every node first)")
    for node, (finds, root) in enumerate([(out / "checkpoints" / latest, out), ("no checkpoint", tmp_path / "node1_disk")]):
        line = (f"ocr_rec: error: Global.resume=auto: rank {node} finds {finds}, but rank(s) 1 "
                + hint.format(root / "checkpoints"))
        log = _worker_log(tmp_path / "c", node)
        assert line in log.splitlines(), log[-3000:]
        for dump in DUMPS:
            assert dump not in log, dump
        assert "lost node" not in log  # each rank's own error wins over the peer's `bye` (peers.BYE_GRACE_S)
    assert rcs == [2, 2]

    procs = _start_nodes(tmp_path / "b", [*recipe, "Global.epochs=4", "Global.resume=auto"])
    assert _wait_all(procs, tmp_path / "b", timeout=300) == [0, 0]
    log0 = _worker_log(tmp_path / "b", 0)
    assert "resuming from" in log0 and (out / "summary.json").exists(), log0[-3000:]


_LOOP = """import os, sys, time
import paddle, paddle.distributed as dist
from paddle_recipes.runtime import distributed as d
info = d.setup(seed=0)
open(os.path.join(sys.argv[1], f'pid{info.rank}'), 'w').write(str(os.getpid()))
t = paddle.ones([4])
for _ in range(600):
    dist.all_reduce(t)
    time.sleep(0.2)
"""


@pytest.mark.slow
def test_frozen_node_is_lost_after_the_heartbeat_timeout(tmp_path):
    """SIGSTOP of node 1's worker (a hung or cut-off node: no connection reset; gloo's own 30 s timeout would end it
    with a raw TIMEOUT traceback):
    node 0 stops after PADDLE_RECIPES_PEER_TIMEOUT (3 s here) with one line, exit 3."""
    (tmp_path / "loop.py").write_text(_LOOP)
    procs = _start_nodes(tmp_path, [tmp_path / "loop.py", tmp_path], env={peers.TIMEOUT_ENV: 3})
    pid1 = None
    try:
        _wait_for(lambda: (tmp_path / "pid1").exists() and (tmp_path / "pid0").exists(), 240, "both workers")
        time.sleep(1)
        pid1 = int((tmp_path / "pid1").read_text())
        os.kill(pid1, signal.SIGSTOP)
        t0 = time.time()
        rc0 = procs[0].wait(timeout=60)
        elapsed = time.time() - t0
    finally:
        if pid1:
            os.kill(pid1, signal.SIGKILL)
        _kill_all(procs)
    log0 = _worker_log(tmp_path, 0)
    lost = [ln for ln in log0.splitlines() if "lost node" in ln]
    assert len(lost) == 1 and lost[0].startswith(
        "rank 0: lost node 1 (rank 1, host 127.0.0.1): no heartbeat for 3 s (node down, frozen or unreachable); "
        "stopping."), log0[-3000:]
    assert rc0 == peers.PEER_LOST_EXIT and 3 <= elapsed < 20, (rc0, elapsed)
    for dump in DUMPS:
        assert dump not in log0, dump


_PROBED = """import os, sys, time
import paddle, paddle.distributed as dist
from paddle_recipes.runtime import distributed as d, peers
info = d.setup(seed=0)
tmp = sys.argv[1]
if info.rank == 0:  # where the monitor listens (an outsider would find it with a port scan)
    host, port = peers._MONITOR.listener.getsockname()[:2]
    open(os.path.join(tmp, 'hub.tmp'), 'w').write(f'{host}:{port}')
    os.replace(os.path.join(tmp, 'hub.tmp'), os.path.join(tmp, 'hub'))
while True:  # all-reduces until the test says `stop` (to rank 0; the sum tells rank 1)
    flag = paddle.to_tensor([float(info.rank == 0 and os.path.exists(os.path.join(tmp, 'stop')))])
    dist.all_reduce(flag)
    if flag.item() > 0:
        break
    time.sleep(0.2)
print(f'rank {info.rank}: finished with {len(peers._MONITOR.peers)} peer(s) watched', flush=True)
d.exit_distributed_run(0)
"""


@pytest.mark.slow
def test_outsiders_on_the_peer_port_do_not_end_a_two_node_run(tmp_path):
    """Issue 37 item 1, on a live 2-node run: a stray TCP connect+close, `hello x` and a spoofed
    `lost node 7 (rank 7, host evil): injected` line at rank 0's monitor port. They ended the run (exit 3; the
    monitor thread died on `hello x`, then gloo's abort, rc 250). Now: one note, the run goes on and finishes."""
    (tmp_path / "probed.py").write_text(_PROBED)
    procs = _start_nodes(tmp_path, [tmp_path / "probed.py", tmp_path])
    try:
        _wait_for(lambda: (tmp_path / "hub").exists(), 240, "rank 0's monitor")
        host, port = (tmp_path / "hub").read_text().rsplit(":", 1)
        for payload in (None, b"hello x\n", SPOOF):
            with socket.create_connection((host, int(port)), timeout=5) as sock:
                if payload is not None:
                    sock.sendall(payload)
                time.sleep(0.5)
        time.sleep(3)  # > the heartbeat interval: the run is still going
        assert all(p.poll() is None for p in procs), _worker_log(tmp_path, 0)[-3000:]
        (tmp_path / "stop").touch()
        rcs = _wait_all(procs, tmp_path, timeout=120)
    finally:
        _kill_all(procs)
    log0, log1 = _worker_log(tmp_path, 0), _worker_log(tmp_path, 1)
    assert rcs == [0, 0], log0[-3000:]
    assert "rank 0: finished with 1 peer(s) watched" in log0 and "rank 1: finished with 1 peer(s) watched" in log1
    notes = [ln for ln in log0.splitlines() if "lost-node monitor" in ln]
    assert len(notes) == 1 and "rank 0: lost-node monitor: dropped a connection from 127.0.0.1:" in notes[0], \
        log0[-3000:]
    for log in (log0, log1):
        assert "lost node" not in log and "evil" not in log and "injected" not in log
        for dump in DUMPS:
            assert dump not in log, dump


# ---- the monitor itself, in one process (fast) ------------------------------------------------------------

class _Store(dict):
    def set(self, k, v):
        self[k] = v

    def get(self, k):
        return self[k]


def _hub(timeout_s=30.0):
    exits = []
    hub = peers.PeerMonitor(0, 3, 1, "127.0.0.1", timeout_s=timeout_s, interval_s=0.1, exit_fn=exits.append)
    store = _Store()
    hub.start(store)
    return hub, store, exits


def _spoke(rank, store):
    exits = []
    return peers.PeerMonitor(rank, 3, 1, "127.0.0.1", timeout_s=30, interval_s=0.1,
                             exit_fn=exits.append).start(store), exits


def _until(pred, timeout=10.0):
    deadline = time.time() + timeout
    while not pred() and time.time() < deadline:
        time.sleep(0.02)
    return pred()


def test_monitor_leaving_rank_is_reported_by_hub_and_forwarded(capfd):
    """Rank 2 leaves (bye): rank 0 prints one line naming node 2 and tells rank 1, which prints it too."""
    hub, store, hub_exits = _hub()
    s1, exits1 = _spoke(1, store)
    s2, exits2 = _spoke(2, store)
    assert _until(lambda: sum(p.rank is not None for p in hub.peers.values()) == 2)
    threading.Thread(target=s2.announce_leaving, args=("it was stopped by SIGTERM",), daemon=True).start()
    assert _until(lambda: hub_exits and exits1)
    assert hub_exits == [3] and exits1 == [3] and exits2 == []
    err = capfd.readouterr().err.splitlines()
    desc = "lost node 2 (rank 2, host 127.0.0.1): it was stopped by SIGTERM; stopping."
    assert sorted(ln.split(";")[0] + "; stopping." for ln in err if "lost" in ln) == [
        f"rank 0: {desc}", f"rank 1: {desc}"], err
    for m in (hub, s1, s2):
        m.close()


def _hub_addr(store) -> tuple[str, int, str]:
    addr, token = store[peers.STORE_KEY].decode().split(" ")
    host, port = addr.rsplit(":", 1)
    return host, int(port), token


def _rank_socket(store, rank, host):
    """A raw connection that passes the handshake as `rank` of this job (it knows the token in the store)."""
    hub_host, port, token = _hub_addr(store)
    sock = socket.create_connection((hub_host, port), timeout=5)
    peers.client_handshake(sock, peers.job_key(token), rank, rank, host)
    return sock


def test_monitor_closed_connection_and_silence_are_losses_done_is_not(capfd):
    hub, store, exits = _hub(timeout_s=0.6)
    finished = _rank_socket(store, 1, "10.0.0.7")
    finished.sendall(b"done\n")
    finished.close()  # a normal end: nothing reported
    time.sleep(1.0)
    assert exits == []
    silent = _rank_socket(store, 2, "10.0.0.8")  # then nothing, but the connection stays open
    assert _until(lambda: exits)
    assert exits == [3]
    assert "rank 0: lost node 2 (rank 2, host 10.0.0.8): no heartbeat for 0.6 s" in capfd.readouterr().err
    silent.close()
    hub.close()

    hub, store, exits = _hub()
    killed = _rank_socket(store, 1, "10.0.0.9")
    time.sleep(0.3)
    killed.close()  # no `done`: the process died
    assert _until(lambda: exits)
    assert "rank 0: lost node 1 (rank 1, host 10.0.0.9): its connection closed" in capfd.readouterr().err
    hub.close()


def test_monitor_that_cannot_reach_rank_0_is_off_with_a_warning(caplog):
    """A firewall between the nodes must not stop training: the monitor is off, with one warning."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    store = _Store({peers.STORE_KEY: f"127.0.0.1:{port} {'0' * 32}".encode()})
    mon = peers.PeerMonitor(1, 2, 1, "127.0.0.1", timeout_s=1).start(store)
    assert mon.stopped and not mon.peers
    assert f"rank 1: lost-node monitor off: cannot reach rank 0's monitor at 127.0.0.1:{port}" in caplog.text


def test_gloo_collective_timeout_is_one_line_exit_3(capsys, monkeypatch):
    """gloo's own 30 s timeout (when the monitor is off or slower) ends in one line, not a traceback."""
    from paddle_recipes.cli import exit_on_user_error

    monkeypatch.setenv("PADDLE_TRAINER_ID", "0")
    monkeypatch.setattr(peers, "_CHECKPOINT_DIR", "/runs/x/checkpoints")

    def exit_now(code):  # a launched rank leaves with os._exit (distributed.exit_now); observe the code instead
        raise SystemExit(code)

    monkeypatch.setattr("paddle_recipes.runtime.distributed.exit_now", exit_now)
    msg = "[/paddle/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:80] TIMEOUT self_rank = none pair_rank = -1"

    def main():
        raise RuntimeError(msg)  # the message measured with a SIGSTOPped peer and the monitor off

    with pytest.raises(SystemExit) as stop:
        exit_on_user_error(main, "ocr_rec")
    assert stop.value.code == peers.PEER_LOST_EXIT
    assert capsys.readouterr().err.splitlines() == [
        "rank 0: a collective timed out (gloo, 30 s): another rank is lost or stalled; stopping. The last checkpoint "
        "is /runs/x/checkpoints/latest: run the same command again on every node with -o Global.resume=auto "
        "to continue from it"]

    def other():
        raise RuntimeError("shape mismatch")

    with pytest.raises(RuntimeError, match="shape mismatch"):  # any other RuntimeError is not hidden
        exit_on_user_error(other, "ocr_rec")



# ---- only a rank of this job can end the run (issue 37 item 1) ---------------------------------------------



def _outsider(store, payload: bytes | None, read_challenge: bool = True) -> None:
    """Connect to the hub like a port scanner or another program: send `payload` (None: nothing), then close."""
    host, port, _ = _hub_addr(store)
    with socket.create_connection((host, port), timeout=5) as sock:
        if read_challenge:
            assert sock.recv(100).startswith(b"challenge ")
        if payload is not None:
            sock.sendall(payload)
        time.sleep(0.2)


def _notes(caplog, what: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == peers.__name__ and what in r.getMessage()]


def test_monitor_ignores_connections_that_are_not_ranks_of_this_job(capfd, caplog, monkeypatch):
    """A stray connect+close, garbage (`hello x`), a spoofed `lost` line, binary junk, an endless line, a wrong
    key and a silent connection: each is closed with one note that never quotes it; no loss, the real ranks
    stay watched (rank 2 leaving afterwards is still reported)."""
    monkeypatch.setattr(peers, "NOTE_EVERY_S", 0.0)  # a note per connection here (rate limit: next test)
    monkeypatch.setattr(peers, "HANDSHAKE_S", 0.5)
    hub, store, hub_exits = _hub()
    s1, exits1 = _spoke(1, store)
    s2, exits2 = _spoke(2, store)
    _outsider(store, None, read_challenge=False)
    _outsider(store, b"hello x\n")
    _outsider(store, SPOOF, read_challenge=False)
    _outsider(store, b"\xff\xfe\x00junk\n")
    _outsider(store, b"x" * 5000)
    host, port, _ = _hub_addr(store)
    with socket.create_connection((host, port), timeout=5) as wrong_key:
        with pytest.raises(peers.BadMessage, match="closed the connection during the handshake"):
            peers.client_handshake(wrong_key, peers.job_key("another job's token"), 1, 1, "evil")
    silent = socket.create_connection((host, port), timeout=5)
    assert _until(lambda: len(_notes(caplog, "dropped")) == 7 and not hub.pending), _notes(caplog, "")
    silent.close()
    assert hub_exits == exits1 == exits2 == [] and len(hub.peers) == 2
    reasons = sorted(n.split(" (", 1)[1].split(";")[0] for n in _notes(caplog, "dropped"))
    assert reasons == sorted(["it closed before the handshake)", "it sent a malformed 'hello' message)",
                       "it did not start with the handshake)", "it sent bytes that are not UTF-8 text)",
                       "it sent a line of more than 2048 bytes)", "its handshake does not prove this job's key)",
                       "no handshake within 0.5 s)"]), reasons
    assert all(n.startswith("rank 0: lost-node monitor: dropped a connection from 127.0.0.1:") and
               n.endswith("; the run goes on") for n in _notes(caplog, "dropped"))
    text = caplog.text + capfd.readouterr().err
    assert "lost node" not in text and "evil" not in text and "injected" not in text and "junk" not in text
    s2.announce_leaving("it was stopped by SIGTERM", wait_s=0)
    assert _until(lambda: hub_exits and exits1)
    assert "rank 1: lost node 2 (rank 2, host 127.0.0.1): it was stopped by SIGTERM; stopping." in capfd.readouterr().err
    for m in (hub, s1, s2):
        m.close()


def test_monitor_notes_are_rate_limited_and_a_ranks_bad_line_is_dropped(caplog, monkeypatch):
    """Many stray connections: one note per NOTE_EVERY_S, the rest counted. A line a rank may not send (a spoke
    claiming `lost`) or cannot (garbage) is noted and dropped; the rank stays connected and watched."""
    hub, store, exits = _hub()
    for _ in range(5):
        _outsider(store, None, read_challenge=False)
    assert _until(lambda: hub._notes_held == 4), hub._notes_held
    assert len(_notes(caplog, "dropped")) == 1
    rank1 = _rank_socket(store, 1, "127.0.0.1")
    monkeypatch.setattr(peers, "NOTE_EVERY_S", 0.0)
    rank1.sendall(SPOOF + b"hello x\nhb\n")
    assert _until(lambda: len(_notes(caplog, "ignored")) == 2)
    time.sleep(0.3)
    assert exits == [] and [p.rank for p in hub.peers.values()] == [1]
    who = "node 1 (rank 1, host 127.0.0.1)"
    assert _notes(caplog, "ignored") == [
        f"rank 0: lost-node monitor: ignored a 'lost' message from {who}: not one it may send now; the run goes on "
        "(4 more since the last note)",
        f"rank 0: lost-node monitor: ignored a message from {who}: a malformed 'hello' message; the run goes on"]
    rank1.close()  # no `done`: a real rank's loss is still reported
    assert _until(lambda: exits) and exits == [3]
    hub.close()


def test_monitor_spoke_refuses_a_hub_without_the_job_key(caplog):
    """A rank whose rank-0 address leads to something that cannot prove the key (an impostor, or another job)
    does not take its `lost` lines: its monitor goes off with one warning and the run goes on."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def impostor():
        conn, _ = server.accept()
        conn.sendall(b"challenge " + b"0" * 32 + b"\n")
        conn.recv(1000)
        conn.sendall(b"welcome " + b"0" * 64 + b"\n" + SPOOF)
        time.sleep(1)
        conn.close()

    threading.Thread(target=impostor, daemon=True).start()
    exits = []
    store = _Store({peers.STORE_KEY: f"127.0.0.1:{port} {'ab' * 16}".encode()})
    mon = peers.PeerMonitor(1, 2, 1, "127.0.0.1", timeout_s=1, exit_fn=exits.append).start(store)
    assert mon.stopped and not mon.peers and exits == []
    assert (f"rank 1: lost-node monitor off: cannot reach rank 0's monitor at 127.0.0.1:{port} (its reply does not "
            "prove this job's key: not this job's rank 0)") in caplog.text
    assert "evil" not in caplog.text
    server.close()


def test_monitor_hub_listens_only_on_its_launcher_address():
    """rank 0 binds the address of PADDLE_CURRENT_ENDPOINT (here 127.0.0.2), not all interfaces: the same port on
    another address of the machine refuses the connection; ranks reach it at the published address."""
    exits = []
    hub = peers.PeerMonitor(0, 2, 1, "127.0.0.2", timeout_s=30, interval_s=0.1, exit_fn=exits.append)
    store = _Store()
    hub.start(store)
    port = hub.listener.getsockname()[1]
    assert hub.listener.getsockname()[0] == "127.0.0.2"
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5)
    spoke, spoke_exits = _spoke(1, store)
    assert not spoke.stopped and _until(lambda: [p.rank for p in hub.peers.values()] == [1])
    for m in (hub, spoke):
        m.close()


@pytest.mark.parametrize("raw, why", [
    (b"hello x", "a malformed 'hello' message"),
    (b"hello 1 1 h " + b"a" * 32 + b" " + b"b" * 63, "a malformed 'hello' message"),
    (b"hello -1 1 h " + b"a" * 32 + b" " + b"b" * 64, "a malformed 'hello' message"),
    (b"hello 1 1 h\x07 " + b"a" * 32 + b" " + b"b" * 64, "control characters"),
    (b"welcome " + b"G" * 64, "a malformed 'welcome' message"),
    (b"hb now", "a malformed 'hb' message"),
    (b"GET / HTTP/1.1\r", "control characters"),
    (b"SSH-2.0-OpenSSH_9.6", "not a message of this protocol"),
    (b"\xc3\x28", "bytes that are not UTF-8 text"),
    (b"bye " + b"x" * 3000, "a line of more than 2048 bytes"),
])
def test_parse_message_refuses_anything_but_the_protocol(raw, why):
    with pytest.raises(peers.BadMessage) as err:
        peers.parse_message(raw)
    assert str(err.value) == why


def test_parse_message_reads_the_protocol():
    mac, nonce = "c" * 64, "a" * 32
    assert peers.parse_message(f"hello 3 1 10.0.0.2 {nonce} {mac}".encode()) == (
        "hello", ["3", "1", "10.0.0.2", nonce, mac])
    assert peers.parse_message(b"hb") == ("hb", [])
    assert peers.parse_message("bye it stopped with an error: 标签文件 x.txt".encode()) == (
        "bye", ["it stopped with an error: 标签文件 x.txt"])
    assert peers.parse_message(b"challenge " + nonce.encode()) == ("challenge", [nonce])
