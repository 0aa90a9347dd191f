"""Lost-node detection for multi-node runs: one line naming the lost peer, not gloo's abort or a 30-min hang.

    monitor = start_peer_monitor(rank=3, world_size=4, local_size=2, host="10.0.0.2", store=store)
    ...                                   # training; a thread watches the other ranks
    finish()                              # normal end: this rank's exit is not a loss
    announce_leaving("its launcher is gone")   # abnormal end of this rank, told to the others first

Rank 0 listens on a TCP port of the address the launcher uses for its node (PADDLE_CURRENT_ENDPOINT's host, not
all interfaces) and publishes `host:port token` in paddle's TCP store; every other rank connects to it, and both
sides send a heartbeat every `interval_s` seconds (default 1 s). A peer is lost when
- its connection closes without a `done` message (process killed, node down with a reset),
- it says it is leaving (`bye`: its launcher died, SIGTERM, an error), or
- nothing came from it for `timeout_s` seconds (default 20 s, env PADDLE_RECIPES_PEER_TIMEOUT; <= 0: off): a
  node that is frozen or cut off. It must stay below gloo's own collective timeout (30 s, not settable in
  paddle 3.3.1), which ends the run with a raw `RuntimeError: ... TIMEOUT` traceback or, inside backward,
  a C++ abort dump; `collective_timeout_line` turns the first into one line too.
Every surviving rank then prints ONE line to stderr, `rank 0: lost node 1 (rank 1, host 10.0.0.2): ...;
stopping. ...resume...`, and exits PEER_LOST_EXIT (3). Rank 0 forwards the loss to the other ranks first.

Who may end a run (threat model). Only a rank of this job: the three causes above count only for a connection
that passed the handshake. The job key is HMAC-SHA256(token, PADDLE_MASTER | PADDLE_TRAINER_ENDPOINTS), where
`token` is 128 random bits that rank 0 draws per run and passes to the other ranks through paddle's TCP store
(the launcher distributes the rest to every rank). The key never crosses the wire; each connection proves it
both ways with fresh nonces (challenge/response, so a recorded handshake cannot be replayed):

    hub -> spoke   challenge <hub_nonce>
    spoke -> hub   hello <rank> <node> <host> <spoke_nonce> <HMAC(key, hello|hub_nonce|rank|node|host|spoke_nonce)>
    hub -> spoke   welcome <HMAC(key, welcome|spoke_nonce|hub_nonce|rank)>
    then           hb | done | bye <reason>, and from the hub only: lost <description>

Anything else (a port scanner's connect+close, garbage, a spoofed `lost ...` line, a wrong key, a line over
MAX_LINE bytes, no handshake within HANDSHAKE_S s) closes that connection with one log line (at most one per
NOTE_EVERY_S s, counting the rest) that never quotes what was sent; the run goes on. A malformed line from an
authenticated rank is noted and dropped, its connection kept (closing it would end the run). Not covered:
whoever can read the job's TCP store (the master endpoint, unauthenticated in paddle) can read the token, and
whoever sits on the path between two nodes can inject into an established connection or reset it; both can
already break the job through the store or gloo's own (unauthenticated) connections.
"""
from __future__ import annotations

import atexit
import hashlib
import hmac
import logging
import os
import re
import secrets
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
HANDSHAKE_S = 20.0  # an unauthenticated connection that has not said a valid `hello` by then is closed
MAX_PENDING = 32  # unauthenticated connections held at once; more are closed on accept
MAX_LINE = 2048  # bytes per message line; a longer one is a bad message
NOTE_EVERY_S = 10.0  # at most one "dropped/ignored" log line per this many seconds
REASON_CHARS = 300  # a `bye` reason or `lost` description is cut to this many characters when sent

_MONITOR: "PeerMonitor | None" = None
_HEX = re.compile(r"[0-9a-f]+")
_HOST = re.compile(r"[A-Za-z0-9._:%\[\]-]{1,255}")
_NONCE_HEX, _MAC_HEX = 32, 64


class BadMessage(ValueError):
    """A line that is not a message of this protocol; the text says why, never what was sent."""


def parse_message(raw: bytes) -> tuple[str, list[str]]:
    """(kind, args) of one line (without its newline); raises BadMessage. Strict: known kinds, exact argument
    counts and forms, printable UTF-8, at most MAX_LINE bytes."""
    if len(raw) > MAX_LINE:
        raise BadMessage(f"a line of more than {MAX_LINE} bytes")
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadMessage("bytes that are not UTF-8 text") from None
    if not line.isprintable():
        raise BadMessage("control characters")
    kind, _, rest = line.partition(" ")
    if kind in ("hb", "done"):
        if rest:
            raise BadMessage(f"a malformed {kind!r} message")
        return kind, []
    if kind in ("bye", "lost"):
        return kind, [rest]
    args = rest.split(" ")
    forms = {"challenge": (_NONCE_HEX,), "welcome": (_MAC_HEX,), "hello": ("int", "int", "host", _NONCE_HEX, _MAC_HEX)}
    if kind not in forms:
        raise BadMessage("not a message of this protocol")
    if len(args) != len(forms[kind]) or not all(_fits(a, f) for a, f in zip(args, forms[kind])):
        raise BadMessage(f"a malformed {kind!r} message")
    return kind, args


def _fits(arg: str, form) -> bool:
    if form == "int":
        return arg.isdigit() and len(arg) <= 9
    if form == "host":
        return _HOST.fullmatch(arg) is not None
    return len(arg) == form and _HEX.fullmatch(arg) is not None


def job_key(token: str, env: dict | None = None) -> bytes:
    """The per-run key: HMAC-SHA256 keyed by rank 0's random `token` over what the launcher gives every rank."""
    env = os.environ if env is None else env
    job = f"paddle_recipes peer monitor v1|{env.get('PADDLE_MASTER', '')}|{env.get('PADDLE_TRAINER_ENDPOINTS', '')}"
    return hmac.new(token.encode(), job.encode(), hashlib.sha256).digest()


def _mac(key: bytes, *parts) -> str:
    return hmac.new(key, "|".join(map(str, parts)).encode(), hashlib.sha256).hexdigest()


def _clean(text: str, limit: int = REASON_CHARS) -> str:
    """One printable line of at most `limit` characters (what a peer may send as a reason)."""
    text = " ".join(str(text).split())
    return "".join(c if c.isprintable() else "?" for c in text)[:limit]


def _bind_host(host: str) -> tuple[str, int]:
    host = host.strip("[]")
    return host, (socket.AF_INET6 if ":" in host else socket.AF_INET)


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
    authed: bool = False  # passed the handshake: a rank of this job
    nonce: str = ""  # hub side: the challenge sent to this connection
    addr: str = "?"  # the remote address, as the kernel reports it

    def describe(self) -> str:
        return f"node {self.node} (rank {self.rank}, host {self.host})"


class PeerMonitor:
    """One daemon thread per process. rank 0 is the hub, every other rank a spoke connected to it."""

    def __init__(self, rank: int, world_size: int, local_size: int, host: str, timeout_s: float = 60.0,
                 interval_s: float = 1.0, exit_fn=os._exit, env: dict | None = None):
        self.rank, self.world_size, self.host = rank, world_size, host
        self.local_size = max(1, local_size)
        self.node = rank // self.local_size
        self.timeout_s, self.interval_s, self.exit_fn = timeout_s, interval_s, exit_fn
        self.env = os.environ if env is None else env
        self.key = b""
        self.peers: dict[socket.socket, _Peer] = {}  # authenticated ranks only
        self.pending: dict[socket.socket, _Peer] = {}  # hub: accepted, handshake not done yet
        self.sel = selectors.DefaultSelector()
        self.lock = threading.Lock()
        self.closing = False  # finish() or announce_leaving() called: no more loss reports
        self.listener: socket.socket | None = None
        self.stopped = False
        self.leaving: list[_Peer] = []  # closed after a `bye` whose grace is not over
        self._note_at, self._notes_held = -NOTE_EVERY_S, 0

    # -- setup ---------------------------------------------------------------------------------------------
    def start(self, store) -> "PeerMonitor":
        """Hub: listen on `host` and publish `host:port token` in `store` (set/get of paddle's TCPStore);
        spoke: connect and do the handshake."""
        if self.rank == 0:
            token = secrets.token_hex(16)
            try:
                bind_host, family = _bind_host(self.host)
                self.listener = socket.create_server((bind_host, 0), family=family,
                                                     backlog=max(8, self.world_size))
            except OSError as exc:
                store.set(STORE_KEY, b"off")
                return self._off(f"cannot listen on {self.host} ({exc})")
            self.key = job_key(token, self.env)
            self.listener.setblocking(False)
            self.sel.register(self.listener, selectors.EVENT_READ)
            store.set(STORE_KEY, f"{self.host}:{self.listener.getsockname()[1]} {token}".encode())
        else:
            value = bytes(store.get(STORE_KEY)).decode(errors="replace")
            if value == "off":
                return self._off("rank 0 could not listen")
            addr, _, token = value.partition(" ")
            hub_host, _, port = addr.rpartition(":")
            if not port.isdigit() or not token:
                return self._off(f"rank 0's monitor address in the TCP store is malformed ({_clean(value, 80)!r})")
            self.key = job_key(token, self.env)
            try:
                sock = socket.create_connection((hub_host.strip("[]"), int(port)), timeout=max(self.timeout_s, 10))
                rest = client_handshake(sock, self.key, self.rank, self.node, self.host)
            except (OSError, BadMessage) as exc:  # e.g. a firewall between the nodes: train on, without the monitor
                return self._off(f"cannot reach rank 0's monitor at {addr} ({exc})")
            self._add(sock, _Peer(sock, rank=0, node=0, host=hub_host, authed=True, addr=addr, buf=rest), self.peers)
        threading.Thread(target=self._loop, name="peer-monitor", daemon=True).start()
        return self

    def _off(self, why: str) -> "PeerMonitor":
        self.closing = self.stopped = True
        logger.warning("rank %d: lost-node monitor off: %s; a lost node may then end this run with gloo's own "
                       "error, or after gloo's timeout", self.rank, why)
        return self

    def _add(self, sock: socket.socket, peer: _Peer, table: dict) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        table[sock] = peer
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

    def _note(self, text: str) -> None:
        """One warning line, at most one per NOTE_EVERY_S s; the ones held back are counted in the next."""
        now = time.monotonic()
        if now - self._note_at < NOTE_EVERY_S:
            self._notes_held += 1
            return
        held = f" ({self._notes_held} more since the last note)" if self._notes_held else ""
        self._note_at, self._notes_held = now, 0
        logger.warning("rank %d: lost-node monitor: %s; the run goes on%s", self.rank, text, held)

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
                try:
                    if key.fileobj is self.listener:
                        self._accept()
                    elif key.fileobj in self.peers or key.fileobj in self.pending:
                        self._read(self.peers.get(key.fileobj) or self.pending[key.fileobj])
                except Exception as exc:  # the thread must outlive any input; this is a bug of ours
                    self._note(f"internal error on a connection ({type(exc).__name__}: {_clean(exc, 120)})")
                    if key.fileobj in self.pending:
                        self._drop(self.pending[key.fileobj], None)
            now = time.monotonic()
            for peer in list(self.pending.values()):
                if now - peer.last_seen > HANDSHAKE_S:
                    self._drop(peer, f"no handshake within {HANDSHAKE_S:g} s")
            for peer in [*self.peers.values(), *self.leaving]:
                if peer.bye is not None and not peer.ended and now >= peer.bye_at:
                    self._lost(peer, peer.bye)
                elif peer.bye is None and not peer.ended and now - peer.last_seen > self.timeout_s:
                    self._lost(peer, f"no heartbeat for {self.timeout_s:g} s (node down, frozen or unreachable)")

    def _accept(self) -> None:
        try:
            sock, addr = self.listener.accept()
        except OSError:  # e.g. out of file descriptors: try again on the next round
            time.sleep(0.05)
            return
        where = f"{addr[0]}:{addr[1]}"
        if len(self.pending) >= MAX_PENDING:
            sock.close()
            self._note(f"closed a connection from {where}: {MAX_PENDING} others are still in their handshake")
            return
        peer = _Peer(sock, nonce=secrets.token_hex(_NONCE_HEX // 2), addr=where)
        self._add(sock, peer, self.pending)
        self._send(sock, f"challenge {peer.nonce}")

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
            if not peer.authed:  # not a rank of this job: its going is nobody's loss
                return self._drop(peer, "it closed before the handshake")
            self.sel.unregister(peer.sock)
            self.peers.pop(peer.sock, None)
            if peer.bye is not None:
                self.leaving.append(peer)  # its `bye` is reported when the grace ends
            elif not peer.ended:
                self._lost(peer, f"its connection closed ({err.strerror if err else 'process ended'})")
            return
        if peer.authed:
            peer.last_seen = time.monotonic()
        peer.buf += data
        while peer.sock in self.peers or peer.sock in self.pending:
            line, newline, rest = peer.buf.partition(b"\n")
            if not newline:
                if len(peer.buf) > MAX_LINE:
                    peer.buf = b""
                    self._bad(peer, f"a line of more than {MAX_LINE} bytes")
                return
            peer.buf = rest
            try:
                kind, args = parse_message(line)
            except BadMessage as exc:
                self._bad(peer, str(exc))
                continue
            if peer.authed:
                self._message(peer, kind, args)
            else:
                self._handshake(peer, kind, args)

    def _bad(self, peer: _Peer, why: str) -> None:
        if peer.authed:  # a rank of this job (a bug, or another version): drop the line, keep watching it
            self._note(f"ignored a message from {peer.describe()}: {why}")
        else:
            self._drop(peer, f"it sent {why}")

    def _drop(self, peer: _Peer, why: str | None) -> None:
        """Close an unauthenticated connection, with one (rate-limited) note unless `why` is None."""
        if self.pending.pop(peer.sock, None) is None:
            return
        try:
            self.sel.unregister(peer.sock)
        except (KeyError, ValueError):
            pass
        peer.sock.close()
        if why is not None:
            self._note(f"dropped a connection from {peer.addr} that is not a rank of this job ({why})")

    def _handshake(self, peer: _Peer, kind: str, args: list[str]) -> None:
        """Hub: the first line of a connection must be a `hello` that proves the job key."""
        if kind != "hello":
            return self._drop(peer, "it did not start with the handshake")
        rank, node, host, nonce, mac = args
        if not hmac.compare_digest(mac, _mac(self.key, "hello", peer.nonce, rank, node, host, nonce)):
            return self._drop(peer, "its handshake does not prove this job's key")
        if not 0 < int(rank) < self.world_size or any(p.rank == int(rank) for p in self.peers.values()):
            return self._drop(peer, f"rank {int(rank)} is out of range or already connected")
        del self.pending[peer.sock]
        peer.rank, peer.node, peer.host = int(rank), int(node), host
        peer.authed, peer.last_seen = True, time.monotonic()
        self._send(peer.sock, f"welcome {_mac(self.key, 'welcome', nonce, peer.nonce, rank)}")
        with self.lock:
            self.peers[peer.sock] = peer

    def _message(self, peer: _Peer, kind: str, args: list[str]) -> None:
        """A line from an authenticated rank."""
        if kind == "hb":
            pass
        elif kind == "done":
            peer.ended = True
        elif kind == "bye":
            if not peer.ended:  # reported after a grace, in which this rank's own error wins
                peer.bye, peer.bye_at = _clean(args[0]), time.monotonic() + BYE_GRACE_S
        elif kind == "lost" and self.rank != 0:  # from the hub: another node is gone
            self._report(_clean(args[0], 2 * REASON_CHARS))
        else:
            self._note(f"ignored a {kind!r} message from {peer.describe()}: not one it may send now")

    def _lost(self, peer: _Peer, why: str) -> None:
        peer.ended = True
        desc = f"{peer.describe()}: {why}"
        with self.lock:
            if self.closing:
                return
            if self.rank == 0:  # tell the other nodes before going
                for sock, other in self.peers.items():
                    if other is not peer and not other.ended:
                        self._send(sock, f"lost {_clean(desc, 2 * REASON_CHARS)}")
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
        if self._end(f"bye {_clean(reason)}"):
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
        for sock in [*self.peers, *self.pending, *([self.listener] if self.listener else [])]:
            sock.close()

    @staticmethod
    def _alive(sock: socket.socket) -> bool:
        try:
            return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            return False


def _recv_line(sock: socket.socket, buf: bytes) -> tuple[bytes, bytes]:
    """(line, what came after it) from a blocking socket and what was already read (`buf`); its timeout applies
    per recv. BadMessage when it closes first or the line is too long."""
    while b"\n" not in buf:
        chunk = sock.recv(256)
        if not chunk:
            raise BadMessage("it closed the connection during the handshake (a different job key?)")
        buf += chunk
        if len(buf) > MAX_LINE:
            raise BadMessage(f"it sent a line of more than {MAX_LINE} bytes")
    line, _, rest = buf.partition(b"\n")
    return line, rest


def client_handshake(sock: socket.socket, key: bytes, rank: int, node: int, host: str) -> bytes:
    """Spoke side of the handshake on a connected blocking socket (module docstring); returns the bytes received
    after it. Raises BadMessage when the other side is not this job's rank 0 (it cannot prove the key)."""
    line, rest = _recv_line(sock, b"")
    kind, args = parse_message(line)
    if kind != "challenge":
        raise BadMessage("it did not start with a challenge")
    hub_nonce, nonce = args[0], secrets.token_hex(_NONCE_HEX // 2)
    host = host if _HOST.fullmatch(host) else "unknown"
    sock.sendall(f"hello {rank} {node} {host} {nonce} {_mac(key, 'hello', hub_nonce, rank, node, host, nonce)}\n"
                 .encode())
    line, rest = _recv_line(sock, rest)
    kind, args = parse_message(line)
    if kind != "welcome" or not hmac.compare_digest(args[0], _mac(key, "welcome", nonce, hub_nonce, rank)):
        raise BadMessage("its reply does not prove this job's key: not this job's rank 0")
    return rest


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
