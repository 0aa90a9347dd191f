"""Dump the weights of a legacy PaddleOCR inference model (inference.pdmodel + .pdiparams) to an .npz, by the
program's variable names (test helper; run in a fresh process: FLAGS_enable_pir_api=0 is read at import).

    FLAGS_enable_pir_api=0 python tests/scripts/dump_legacy_inference.py <model_dir>/inference out.npz

The .npz also holds "__feed__" / "__fetch__" (the program's input and output names) and "__shape__<name>" of every
persistable variable as the program declares it.
"""
import sys

import numpy as np
import paddle


def main(prefix: str, out: str) -> None:
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    prog, feeds, fetches = paddle.static.load_inference_model(prefix, exe)
    scope = paddle.static.global_scope()
    arrays = {}
    for v in prog.list_vars():
        if v.persistable and v.name not in ("feed", "fetch"):
            arrays[v.name] = np.array(scope.find_var(v.name).get_tensor())
            arrays["__shape__" + v.name] = np.asarray(v.shape, dtype=np.int64)
    arrays["__feed__"] = np.asarray(feeds)
    arrays["__fetch__"] = np.asarray([f.name for f in fetches])
    np.savez(out, **arrays)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
