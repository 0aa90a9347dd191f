"""Our compiled CPU ops: a C++ source of kernels/ built once per machine with paddle.utils.cpp_extension, cached.

    from paddle_recipes.kernels.build import load_ops
    ops = load_ops("pr_affine_ext", Path("kernels/affine.cc"), ("-O3", "-march=native", "-ffp-contract=off"))

Used by depthwise_kernel.py (Global.cpu_depthwise_kernel) and affine_kernel.py (Global.cpu_affine_kernel). The
build (~15 s once, the system C++ compiler) goes into a cache folder keyed by the source, the flags, paddle, Python
and this CPU's instruction set: $PADDLE_RECIPES_CACHE or ~/.cache/paddle_recipes, then kernels/<stem>-<key>. It runs
in a staging folder renamed into place when it succeeded (a build killed half-way leaves nothing that looks built);
processes starting together (DDP ranks) wait on a lock file beside the folder. Later processes load it in ~1.5 s.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import platform
import re
import shutil
import sys
from pathlib import Path
from typing import Sequence

import paddle

try:
    import fcntl  # the build lock (POSIX); elsewhere processes building at once are not serialised
except ImportError:  # pragma: no cover - Windows
    fcntl = None

KERNELS = Path(__file__).parent  # the .cc sources sit beside their wrappers


class KernelBuildError(RuntimeError):
    """The C++ kernel could not be compiled or loaded (no compiler, no paddle headers, ...)."""


def _cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return line
    except OSError:
        pass
    return platform.processor()


def cache_dir(source: Path, flags: Sequence[str]) -> Path:
    """The build folder of this source / flags / paddle / Python / CPU instruction set (a -march=native binary is
    only loaded on the CPU kind it was built for)."""
    key = hashlib.sha256(b"\0".join(s.encode() if isinstance(s, str) else s for s in (
        source.read_bytes(), paddle.__version__, sys.version, platform.machine(), _cpu_flags(),
        " ".join(flags)))).hexdigest()[:16]
    root = Path(os.environ.get("PADDLE_RECIPES_CACHE") or Path.home() / ".cache" / "paddle_recipes")
    return root / "kernels" / f"{source.stem}-{key}"


def _build(name: str, source: Path, flags: Sequence[str], folder: Path):
    """paddle.utils.cpp_extension.load of source into folder, its console lines captured."""
    from paddle.utils import cpp_extension

    captured = io.StringIO()
    ext_logger = logging.getLogger("utils.cpp_extension")  # paddle's: "Compiling ...", "using custom operator only"
    level, child_warnings = ext_logger.level, os.environ.get("PYTHONWARNINGS")
    ext_logger.setLevel(logging.WARNING)
    os.environ["PYTHONWARNINGS"] = "ignore:No ccache found"  # the compiler subprocess imports paddle too
    try:
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            return cpp_extension.load(name=name, sources=[str(source)], extra_cxx_cflags=list(flags),
                                      build_directory=str(folder), verbose=False)
    except Exception as e:  # compiler or loader failure: one line with its last words
        lines = [ln for ln in (str(e) + "\n" + captured.getvalue()).splitlines() if ln.strip()]
        tail = next((ln for ln in reversed(lines) if "error" in ln.lower()), lines[-1] if lines else repr(e))
        raise KernelBuildError(f"building {source.name} in {folder} failed: {tail.strip()[:300]}") from None
    finally:
        ext_logger.setLevel(level)
        if child_warnings is None:
            os.environ.pop("PYTHONWARNINGS", None)
        else:
            os.environ["PYTHONWARNINGS"] = child_warnings


def load_ops(name: str, source: Path, flags: Sequence[str]):
    """The compiled op module `name` of `source`: built on the first call on this machine, loaded from the cache
    folder after. Raises KernelBuildError with the compiler's (or loader's) last line."""
    folder = cache_dir(source, flags)
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise KernelBuildError(f"cannot create the kernel cache folder {folder.parent}: {e.strerror}") from None
    stub = re.compile(re.escape(name) + r"_\d+\.py")  # the Python stub paddle writes for each load() call
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / name / f"{name}.so").is_file():
            stubs = {f.name for f in (folder / name).glob("*.py")}
            try:
                module = _build(name, source, flags, folder)  # paddle sees the built library and loads it
            except KernelBuildError as e:
                raise KernelBuildError(f"{e} (delete {folder} to build it again)") from None
        else:
            for old in folder.parent.glob(f"{folder.name}.building-*"):  # builds that never finished
                shutil.rmtree(old, ignore_errors=True)
            staging = folder.parent / f"{folder.name}.building-{os.getpid()}"
            staging.mkdir()
            try:
                module = _build(name, source, flags, staging)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            shutil.rmtree(folder, ignore_errors=True)  # a folder without the library: a leftover
            staging.rename(folder)
            stubs = set()
        for f in (folder / name).glob("*.py"):  # this load's stub is imported: delete it, not the others'
            if stub.fullmatch(f.name) and f.name not in stubs:
                f.unlink(missing_ok=True)
    return module


def load_once(kernel_module):
    """The op module of a kernel module (one with NAME, SOURCE, CXX_FLAGS and a `_module` cache): load_ops on the
    first call, kept in kernel_module._module after."""
    if kernel_module._module is None:
        kernel_module._module = load_ops(kernel_module.NAME, kernel_module.SOURCE, kernel_module.CXX_FLAGS)
    return kernel_module._module


def uses_kernel(layer, x, *params) -> bool:
    """True when a switched layer's call runs our compiled ops: training mode with float32 input and `params`;
    evaluation, export and other dtypes keep paddle's ops."""
    return layer.training and x.dtype == paddle.float32 and all(p.dtype == paddle.float32 for p in params)
