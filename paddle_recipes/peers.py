"""Lost-node detection for multi-node runs: one line naming the lost peer, not gloo's abort or a 30-min hang.

    monitor = start_peer_monitor(rank=3, world_size=4, local_size=2, host="10.0.0.2", store=store)
    ...                                   # training; a thread watches the other ranks
    finish()                              # normal end: this rank's exit is not a loss
    announce_leaving("its launcher is gone")   # abnormal end of this rank, told to the others first

Rank 0 listens on a TCP port (published in paddle's TCP store); every other rank connects to it, and both
sides send a heartbeat every `interval_s` seconds (default 1 s). A peer is lost when
- its connection closes without a `done` message (process killed, node down with a reset),
- it says it is leaving (`bye`: its launcher died, SIGTERM, an error), or
- nothing came from it for `timeout_s` seconds (default 20 s, env PADDLE_RECIPES_PEER_TIMEOUT; <= 0: off): a
  node that is frozen or cut off. It must stay below gloo's own collective timeout (30 s, not settable in
  paddle 3.3.1), which ends the run with a raw `RuntimeError: ... TIMEOUT` traceback or, inside backward,
  a C++ abort dump; `collective_timeout_line` turns the first into one line too.
Every surviving rank then prints ONE line to stderr, `rank 0: lost node 1 (rank 1, host 10.0.0.2): ...;
stopping. ...resume...`, and exits PEER_LOST_EXIT (3). Rank 0 forwards the loss to the other ranks first.
"""
from __future__ import annotations

import atexit
import logging
import os
import selectors
import socket
import sys
import threading
import time
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

PEER_LOST_EXIT = 3
STORE_KEY = "paddle_recipes/peer_monitor"
TIMEOUT_ENV = "PADDLE_RECIPES_PEER_TIMEOUT"
RESUME_HINT = ("stopping. The last checkpoint is {where}: run the same command again on every node "
               "with -o Global.resume=auto to continue from it")
_CHECKPOINT_DIR = "<output_dir>/checkpoints"
BYE_GRACE_S = 1.0  # a peer's `bye` is reported this long after it came; the leaver waits up to 3 s

_MONITOR: "PeerMonitor | None" = None


@dataclass
class _Peer:
    sock: socket.socket
    rank: int | None = None
    node: int | None = None
    host: str = "?"
    last_seen: float = field(default_factory=time.monotonic)
    buf: bytes = b""
    ended: bool = False  # sent `done` (normal end), or its loss was reported
    bye: str | None = None  # the reason it gave for leaving
    bye_at: float = 0.0  # when to report it

    def describe(self) -> str:
        return f"node {self.node} (rank {self.rank}, host {self.host})"


class PeerMonitor:
    """One daemon thread per process. rank 0 is the hub, every other rank a spoke connected to it."""

    def __init__(self, rank: int, world_size: int, local_size: int, host: str, timeout_s: float = 60.0,
                 interval_s: float = 1.0, exit_fn=os._exit):
        self.rank, self.world_size, self.host = rank, world_size, host
        self.local_size = max(1, local_size)
        self.node = rank // self.local_size
        self.timeout_s, self.interval_s, self.exit_fn = timeout_s, interval_s, exit_fn
        self.peers: dict[socket.socket, _Peer] = {}
        self.sel = selectors.DefaultSelector()
        self.lock = threading.Lock()
        self.closing = False  # finish() or announce_leaving() called: no more loss reports
        self.listener: socket.socket | None = None
        self.stopped = False
        self.leaving: list[_Peer] = []  # closed after a `bye` whose grace is not over

    # -- setup ---------------------------------------------------------------------------------------------
    def start(self, store) -> "PeerMonitor":
        """Hub: listen and publish host:port in `store` (set/get of paddle's TCPStore); spoke: connect."""
        if self.rank == 0:
            try:
                self.listener = socket.create_server(("", 0), backlog=max(8, self.world_size))
            except OSError as exc:
                store.set(STORE_KEY, b"off")
                return self._off(f"cannot listen ({exc})")
            self.listener.setblocking(False)
            self.sel.register(self.listener, selectors.EVENT_READ)
            store.set(STORE_KEY, f"{self.host}:{self.listener.getsockname()[1]}".encode())
        else:
            addr = bytes(store.get(STORE_KEY)).decode()
            if addr == "off":
                return self._off("rank 0 could not listen")
            hub_host, port = addr.rsplit(":", 1)
            try:
                sock = socket.create_connection((hub_host, int(port)), timeout=max(self.timeout_s, 10))
            except OSError as exc:  # e.g. a firewall between the nodes: train on, without the monitor
                return self._off(f"cannot reach rank 0's monitor at {addr} ({exc})")
            self._add(sock, _Peer(sock, rank=0, node=0, host=hub_host))
            self._send(sock, f"hello {self.rank} {self.node} {self.host}")
        threading.Thread(target=self._loop, name="peer-monitor", daemon=True).start()
        return self

    def _off(self, why: str) -> "PeerMonitor":
        self.closing = self.stopped = True
        logger.warning("rank %d: lost-node monitor off: %s; a lost node may then end this run with gloo's own "
                       "error, or after gloo's timeout", self.rank, why)
        return self

    def _add(self, sock: socket.socket, peer: _Peer) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        self.peers[sock] = peer
        self.sel.register(sock, selectors.EVENT_READ)

    @staticmethod
    def _send(sock: socket.socket, line: str) -> None:
        try:
            sock.setblocking(True)
            sock.settimeout(1.0)
            sock.sendall((line + "\n").encode())
        except OSError:
            pass  # the receiving side notices the loss on its own
        finally:
            try:
                sock.setblocking(False)
            except OSError:
                pass

    # -- the watching thread -------------------------------------------------------------------------------
    def _loop(self) -> None:
        next_beat = 0.0
        while not self.stopped:
            now = time.monotonic()
            with self.lock:
                if now >= next_beat and not self.closing:
                    for sock in list(self.peers):
                        self._send(sock, "hb")
                    next_beat = now + self.interval_s
            for key, _ in self.sel.select(timeout=self.interval_s / 2):
                if key.fileobj is self.listener:
                    try:
                        sock, _ = self.listener.accept()
                    except OSError:
                        continue
                    with self.lock:
                        self._add(sock, _Peer(sock))
                    continue
                self._read(self.peers[key.fileobj])
            now = time.monotonic()
            for peer in [*self.peers.values(), *self.leaving]:
                if peer.bye is not None and not peer.ended and now >= peer.bye_at:
                    self._lost(peer, peer.bye)
                elif peer.bye is None and not peer.ended and now - peer.last_seen > self.timeout_s:
                    self._lost(peer, f"no heartbeat for {self.timeout_s:g} s (node down, frozen or unreachable)")

    def _read(self, peer: _Peer) -> None:
        try:
            data = peer.sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            data, err = b"", exc
        else:
            err = None
        if not data:
            self.sel.unregister(peer.sock)
            self.peers.pop(peer.sock, None)
            if peer.bye is not None:
                self.leaving.append(peer)  # its `bye` is reported when the grace ends
            elif not peer.ended:
                self._lost(peer, f"its connection closed ({err.strerror if err else 'process ended'})")
            return
        peer.last_seen = time.monotonic()
        peer.buf += data
        while b"\n" in peer.buf:
            line, peer.buf = peer.buf.split(b"\n", 1)
            self._message(peer, line.decode(errors="replace"))

    def _message(self, peer: _Peer, line: str) -> None:
        kind, _, rest = line.partition(" ")
        if kind == "hello":
            rank, node, host = rest.split(" ", 2)
            peer.rank, peer.node, peer.host = int(rank), int(node), host
        elif kind == "done":
            peer.ended = True
        elif kind == "bye" and not peer.ended:  # reported after a grace, in which this rank's own error wins
            peer.bye, peer.bye_at = rest, time.monotonic() + BYE_GRACE_S
        elif kind == "lost":  # from the hub: another node is gone
            self._report(rest)

    def _lost(self, peer: _Peer, why: str) -> None:
        peer.ended = True
        desc = f"{peer.describe()}: {why}"
        with self.lock:
            if self.closing:
                return
            if self.rank == 0:  # tell the other nodes before going
                for sock, other in self.peers.items():
                    if other is not peer and not other.ended:
                        self._send(sock, f"lost {desc}")
        self._report(desc)

    def _report(self, desc: str) -> None:
        with self.lock:
            if self.closing:
                return
            self.closing = True
        where = os.path.join(_CHECKPOINT_DIR, "latest")
        sys.stderr.write(f"rank {self.rank}: lost {desc}; {RESUME_HINT.format(where=where)}\n")
        sys.stderr.flush()
        self.exit_fn(PEER_LOST_EXIT)

    # -- this rank ends ------------------------------------------------------------------------------------
    def finish(self) -> None:
        """Normal end of this rank: tell the peers (`done`) and stop reporting losses."""
        self._end("done")

    def announce_leaving(self, reason: str, wait_s: float = 3.0) -> None:
        """This rank stops abnormally: tell the peers why (`bye`), then wait up to `wait_s` s for them to
        report it and close, so they print the reason rather than a collective's error."""
        if self._end(f"bye {reason}"):
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and any(self._alive(s) for s in list(self.peers)):
                time.sleep(0.05)

    def _end(self, line: str) -> bool:
        with self.lock:
            if self.closing:
                return False
            self.closing = True
            for sock, peer in self.peers.items():
                if not peer.ended:
                    self._send(sock, line)
        return True

    def close(self) -> None:
        """Stop the thread and close the sockets (tests; a real run ends with its process)."""
        self.closing = self.stopped = True
        time.sleep(self.interval_s)
        for sock in [*self.peers, *([self.listener] if self.listener else [])]:
            sock.close()

    @staticmethod
    def _alive(sock: socket.socket) -> bool:
        try:
            return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            return False


def start_peer_monitor(rank: int, world_size: int, local_size: int, host: str, store,
                       timeout_s: float | None = None, interval_s: float = 1.0) -> PeerMonitor:
    """Start this process's monitor (once); `timeout_s` defaults to $PADDLE_RECIPES_PEER_TIMEOUT or 20 s (<= 0: off).
    A normal interpreter exit counts as `done`; an uncaught exception is announced as `bye`."""
    global _MONITOR
    if _MONITOR is not None:
        return _MONITOR
    if timeout_s is None:
        timeout_s = float(os.environ.get(TIMEOUT_ENV, "20"))
    if timeout_s <= 0:  # switched off by the user (rank 0 tells the others, which may not have the setting)
        if rank == 0:
            store.set(STORE_KEY, b"off")
        return PeerMonitor(rank, world_size, local_size, host)._off(f"{TIMEOUT_ENV}={timeout_s:g}")
    _MONITOR = PeerMonitor(rank, world_size, local_size, host, timeout_s=timeout_s, interval_s=interval_s)
    _MONITOR.start(store)
    previous_hook = sys.excepthook

    def hook(exc_type, exc, tb):
        previous_hook(exc_type, exc, tb)
        announce_leaving(f"it stopped with {exc_type.__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")

    sys.excepthook = hook
    atexit.register(finish)
    return _MONITOR


def set_checkpoint_dir(path) -> None:
    """Name `path`/latest in the loss line (default: <output_dir>/checkpoints/latest)."""
    global _CHECKPOINT_DIR
    _CHECKPOINT_DIR = str(path)


def finish() -> None:
    """Normal end of this rank (no-op without a monitor)."""
    if _MONITOR is not None:
        _MONITOR.finish()


def collective_timeout_line(exc: BaseException) -> str | None:
    """One line for gloo's own collective timeout (`RuntimeError: [.../gloo/...] TIMEOUT ...`), else None."""
    text = str(exc)
    if "gloo" not in text or "TIMEOUT" not in text:
        return None
    rank = os.environ.get("PADDLE_TRAINER_ID", "?")
    where = os.path.join(_CHECKPOINT_DIR, "latest")
    return (f"rank {rank}: a collective timed out (gloo, 30 s): another rank is lost or stalled; "
            f"{RESUME_HINT.format(where=where)}")


def announce_leaving(reason: str) -> None:
    """This rank stops abnormally for `reason` (no-op without a monitor)."""
    if _MONITOR is not None:
        _MONITOR.announce_leaving(reason)
