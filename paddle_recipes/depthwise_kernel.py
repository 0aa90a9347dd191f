"""Global.cpu_depthwise_kernel: the depthwise convolutions of the training step run our compiled CPU kernel.

    from paddle_recipes.depthwise_kernel import depthwise_conv2d, use_depthwise_kernel
    y = depthwise_conv2d(x, weight, stride=(1, 1), padding=(1, 1))   # functional: NCHW float32 CPU, with gradient
    n = use_depthwise_kernel(model)    # in place: n eligible nn.Conv2D layers use it in training mode

On CPU, paddle's depthwise_conv2d (and its gradient) is the largest op of a PP-OCR mobile training step (the profile
in benchmarks/README.md). `kernels/depthwise_conv2d.cc` computes the same sums row by row (vectorized axpy and dot
products); only the float32 summation order differs, so losses agree to float tolerance
(docs/cards/depthwise_kernel.md). It is built on first use with the system C++ compiler through
paddle.utils.cpp_extension (~15 s once) into a cache folder keyed by the source, paddle, Python and this CPU's
instruction set: $PADDLE_RECIPES_CACHE or ~/.cache/paddle_recipes, then kernels/depthwise_conv2d-<key>.

Eligible layers: nn.Conv2D with groups == in_channels == out_channels, dilation 1, zero padding given as an int or
[h, w], NCHW. Training-mode float32 calls use the kernel; evaluation, export (jit.save traces eval mode) and other
dtypes keep paddle's conv, so saved models and checkpoints never reference the custom op and the weights keep
their names. CPU only: on a GPU, cuDNN's depthwise kernel is kept (use_depthwise_kernel is not applied there).
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
from typing import Sequence, Tuple, Union

import paddle
from paddle import nn

try:
    import fcntl  # the build lock (POSIX); elsewhere processes building at once are not serialised
except ImportError:  # pragma: no cover - Windows
    fcntl = None

logger = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("kernels") / "depthwise_conv2d.cc"
CXX_FLAGS = ("-O3", "-march=native", "-fopenmp-simd")
_module = None


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


def cache_dir() -> Path:
    """The build folder of this source / paddle / Python / CPU instruction set (a -march=native binary is only
    loaded on the CPU kind it was built for)."""
    key = hashlib.sha256(b"\0".join(s.encode() if isinstance(s, str) else s for s in (
        SOURCE.read_bytes(), paddle.__version__, sys.version, platform.machine(), _cpu_flags(),
        " ".join(CXX_FLAGS)))).hexdigest()[:16]
    root = Path(os.environ.get("PADDLE_RECIPES_CACHE") or Path.home() / ".cache" / "paddle_recipes")
    return root / "kernels" / f"depthwise_conv2d-{key}"


NAME = "pr_depthwise_conv2d_ext"
_STUB = re.compile(re.escape(NAME) + r"_\d+\.py")  # the Python stub paddle writes for each load() call


def _build(folder: Path):
    """paddle.utils.cpp_extension.load of SOURCE into folder, its console lines captured; (module, captured)."""
    from paddle.utils import cpp_extension

    captured = io.StringIO()
    ext_logger = logging.getLogger("utils.cpp_extension")  # paddle's: "Compiling ...", "using custom operator only"
    level, child_warnings = ext_logger.level, os.environ.get("PYTHONWARNINGS")
    ext_logger.setLevel(logging.WARNING)
    os.environ["PYTHONWARNINGS"] = "ignore:No ccache found"  # the compiler subprocess imports paddle too
    try:
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            return cpp_extension.load(name=NAME, sources=[str(SOURCE)], extra_cxx_cflags=list(CXX_FLAGS),
                                      build_directory=str(folder), verbose=False)
    except Exception as e:  # compiler or loader failure: one line with its last words
        lines = [ln for ln in (str(e) + "\n" + captured.getvalue()).splitlines() if ln.strip()]
        tail = next((ln for ln in reversed(lines) if "error" in ln.lower()), lines[-1] if lines else repr(e))
        raise KernelBuildError(f"building {SOURCE.name} in {folder} failed: {tail.strip()[:300]}") from None
    finally:
        ext_logger.setLevel(level)
        if child_warnings is None:
            os.environ.pop("PYTHONWARNINGS", None)
        else:
            os.environ["PYTHONWARNINGS"] = child_warnings


@paddle.jit.not_to_static  # a to_static trace calls it as Python and records the op it returns
def load_kernel():
    """The compiled op module: built on the first call on this machine, loaded from the cache folder after.
    A build runs in a staging folder renamed into place when it succeeded, so a build killed half-way leaves no
    cache entry that looks complete; processes starting together wait on a lock file beside the folder.
    Raises KernelBuildError with the compiler's (or loader's) last line."""
    global _module
    if _module is not None:
        return _module
    folder = cache_dir()
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise KernelBuildError(f"cannot create the kernel cache folder {folder.parent}: {e.strerror}") from None
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / NAME / f"{NAME}.so").is_file():
            stubs = {f.name for f in (folder / NAME).glob("*.py")}
            try:
                _module = _build(folder)  # paddle sees the built library and loads it
            except KernelBuildError as e:
                raise KernelBuildError(f"{e} (delete {folder} to build it again)") from None
        else:
            for old in folder.parent.glob(f"{folder.name}.building-*"):  # builds that never finished
                shutil.rmtree(old, ignore_errors=True)
            staging = folder.parent / f"{folder.name}.building-{os.getpid()}"
            staging.mkdir()
            try:
                _module = _build(staging)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            shutil.rmtree(folder, ignore_errors=True)  # a folder without the library: a leftover
            staging.rename(folder)
            stubs = set()
        for f in (folder / NAME).glob("*.py"):  # this load's stub is imported: delete it, not the others'
            if _STUB.fullmatch(f.name) and f.name not in stubs:
                f.unlink(missing_ok=True)
    return _module


def _pair(value) -> Tuple[int, int]:
    if isinstance(value, int):
        return value, value
    return int(value[0]), int(value[1])


def depthwise_conv2d(x: paddle.Tensor, weight: paddle.Tensor, stride: Union[int, Sequence[int]] = 1,
                     padding: Union[int, Sequence[int]] = 0) -> paddle.Tensor:
    """F.conv2d(x, weight, stride=stride, padding=padding, groups=C) for x [N, C, H, W] and weight [C, 1, kh, kw],
    float32 on CPU, zero padding (pixels, symmetric), dilation 1; differentiable in x and weight."""
    return load_kernel().pr_depthwise_conv2d(x, weight, list(_pair(stride)), list(_pair(padding)))


class DepthwiseKernelConv2D(nn.Conv2D):
    """An nn.Conv2D whose training-mode float32 forward is depthwise_conv2d (+ bias); anything else is nn.Conv2D's.
    use_depthwise_kernel turns eligible layers into this class in place (same parameters, same names)."""

    def forward(self, x):
        if not self.training or x.dtype != paddle.float32 or self.weight.dtype != paddle.float32:
            return super().forward(x)
        y = depthwise_conv2d(x, self.weight, self._stride, self._padding)
        if self.bias is not None:
            y = y + self.bias.reshape([1, -1, 1, 1])
        return y


def eligible(layer: nn.Layer) -> bool:
    """True for an nn.Conv2D the kernel computes exactly: one filter per channel, dilation 1, zero padding as an
    int or [h, w], NCHW."""
    if not isinstance(layer, nn.Conv2D) or isinstance(layer, DepthwiseKernelConv2D):
        return False
    pad = layer._padding
    pad_ok = isinstance(pad, int) or (isinstance(pad, (list, tuple)) and len(pad) == 2
                                      and all(isinstance(p, int) for p in pad))
    return (layer._groups == layer._in_channels == layer._out_channels and pad_ok
            and list(layer._dilation) == [1, 1] and layer._padding_mode == "zeros" and layer._data_format == "NCHW")


def use_depthwise_kernel(model: nn.Layer) -> int:
    """Turn every eligible nn.Conv2D of model into a DepthwiseKernelConv2D (in place; builds the kernel first, so
    a build failure leaves the model unchanged). Returns how many layers changed."""
    layers = [m for m in model.sublayers(include_self=True) if eligible(m)]
    if layers:
        load_kernel()
    for layer in layers:
        layer.__class__ = DepthwiseKernelConv2D
    return len(layers)
