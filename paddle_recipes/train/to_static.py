"""Global.to_static: the model's training forward runs as a static graph (paddle.jit.to_static), PaddleOCR's switch.

    model = apply_to_static(model)     # in place; training-mode calls of model(...) now run a static program

Only training-mode calls are converted (the training step's forward and its backward); evaluation, the
zero-loss forward of an empty batch and export keep the dygraph forward. The weights, their names and the
optimizer are the same objects, so checkpoints do not change. Input specs as PaddleOCR's (ppocr
apply_to_static): the batch axis is None, every other axis of each tensor argument (image, MultiHead's targets)
is the batch's own. A batch of another shape (multi-scale sampling) gets its own program, traced once and
logged, as paddle's to_static does in PaddleOCR. A forward that cannot be converted is one ConfigError line
naming the layer and the source line. docs/cards/to_static.md has the measured effect.
"""
from __future__ import annotations

import inspect
import logging
import os
import re
import traceback

import paddle
from paddle.static import InputSpec

from ..config import ConfigError

logger = logging.getLogger(__name__)


def _spec(value):
    """InputSpec tree of a forward argument (batch axis None); None stays None; anything else is refused."""
    if value is None:
        return None
    if isinstance(value, paddle.Tensor):
        return InputSpec([None, *value.shape[1:]], dtype=value.dtype)
    if isinstance(value, (list, tuple)):
        return [_spec(v) for v in value]
    raise TypeError(f"a {type(value).__name__} argument (only tensors, lists of tensors and None are converted)")


def _key(spec) -> tuple:
    if spec is None:
        return (None,)
    if isinstance(spec, list):
        return tuple(_key(s) for s in spec)
    return (tuple(spec.shape), str(spec.dtype))


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\w+)')
_ERROR = re.compile(r"^\s*(\w+(?:Error|Exception)): (.+)$", re.M)


def _defines(cls: type, file: str, line: int) -> bool:
    """True when a function defined in ``cls``'s own body spans ``file``:``line``."""
    for fn in vars(cls).values():
        try:
            src, start = inspect.getsourcelines(fn)
            if os.path.samefile(inspect.getsourcefile(fn), file) and start <= line < start + len(src):
                return True
        except (TypeError, OSError):
            continue
    return False


def describe_failure(exc: BaseException, model: paddle.nn.Layer) -> str:
    """'<layer class> (file:line): <ErrorType>: <message>' of a failed conversion: the innermost frame outside
    paddle (paddle's "In transformed code" report, else the traceback), the layer of ``model`` defining it."""
    text = str(exc)
    ours = [[(f, n) for f, n in frames if f"{os.sep}paddle{os.sep}" not in f and os.path.exists(f)]
            for frames in ([(f, int(n)) for f, n, _ in _FRAME.findall(text)],
                           [(fr.f_code.co_filename, n) for fr, n in traceback.walk_tb(exc.__traceback__)])]
    frames = ours[0] or ours[1]  # paddle's report of the transformed code first, else the traceback
    where = ""
    if frames:
        file, line = frames[-1]
        layer = next((type(m).__name__ for m in model.sublayers(include_self=True) if _defines(type(m), file, line)),
                     None)
        where = f"{layer + ' ' if layer else ''}({os.path.basename(file)}:{line}): "
    errors = _ERROR.findall(text)
    kind, msg = errors[-1] if errors else (type(exc).__name__, (text.strip().splitlines() or [""])[0])
    return f"{where}{kind}: {msg.strip()[:200]}"


class StaticTrainForward:
    """Replaces ``model.forward``: training-mode calls with positional arguments run the static program of their
    input specs; eval-mode calls and calls with keyword arguments run the dygraph forward. ``traced`` lists the
    spec keys converted so far."""

    def __init__(self, model: paddle.nn.Layer):
        self.model, self.dygraph = model, model.forward
        self.programs: dict = {}

    @property
    def traced(self) -> list:
        return list(self.programs)

    def _specs(self, args) -> list:
        name = type(self.model).__name__
        if not args or not isinstance(args[0], paddle.Tensor):
            raise ConfigError(f"Global.to_static: {name}.forward's first argument is not an image tensor")
        try:
            return [_spec(a) for a in args]
        except TypeError as exc:
            raise ConfigError(f"Global.to_static: {name}.forward gets {exc}") from None

    def __call__(self, *args, **kwargs):
        if not self.model.training or kwargs:
            return self.dygraph(*args, **kwargs)
        specs = self._specs(args)
        key = _key(specs)
        program = self.programs.get(key)
        if program is not None:
            return program(*args)
        program = paddle.jit.to_static(type(self.model).forward.__get__(self.model), input_spec=specs,
                                       full_graph=True)
        try:
            out = program(*args)
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - any conversion failure becomes one line
            raise ConfigError(f"Global.to_static: {type(self.model).__name__}.forward cannot run as a static graph: "
                              f"{describe_failure(exc, self.model)}; set Global.to_static: false") from None
        self.programs[key] = program
        logger.info("Global.to_static: %s.forward converted for inputs %s", type(self.model).__name__, key)
        return out


def apply_to_static(model: paddle.nn.Layer) -> paddle.nn.Layer:
    """Give ``model`` a StaticTrainForward (in place; returns ``model``)."""
    object.__setattr__(model, "forward", StaticTrainForward(model))
    return model
