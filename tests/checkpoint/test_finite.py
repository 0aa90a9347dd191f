"""finite.py: the one-sync inf/nan check, and checkpoint.first_nonfinite's names built on it."""
import math

import numpy as np
import paddle
import pytest

from paddle_recipes.checkpoint.format import first_nonfinite
from paddle_recipes.checkpoint.finite import all_finite, first_bad_index


def _state():
    return {"backbone": {"conv.weight": paddle.ones([2, 3]), "bn._variance": paddle.full([3], 2.0)},
            "head.bias": paddle.zeros([4]).astype("float16"), "steps": paddle.to_tensor([3], dtype="int64"),
            "table": np.ones(3, dtype="float32")}


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_first_bad_tensor_is_found_in_dict_order(bad):
    state = _state()
    assert first_nonfinite(state) is None
    state["head.bias"][1] = bad
    assert first_nonfinite(state) == "head.bias"
    state["backbone"]["bn._variance"][0] = bad
    assert first_nonfinite(state) == "backbone.bn._variance"  # the earlier one wins
    assert first_bad_index([paddle.ones([2]), state["head.bias"], state["backbone"]["bn._variance"]]) == 1


def test_numpy_arrays_and_order_across_kinds():
    state = _state()
    state["table"][2] = np.nan
    assert first_nonfinite(state) == "table"
    state["head.bias"][0] = math.inf
    assert first_nonfinite(state) == "head.bias"  # before "table" in dict order


def test_finite_values_whose_sum_overflows_are_not_reported():
    big = [paddle.full([8], 3e38), paddle.full([4], 6e4).astype("float16")]
    assert all_finite(big) and first_nonfinite({"a": big[0], "b": big[1]}) is None
    assert not all_finite([paddle.to_tensor([math.inf, -math.inf])])  # their sum is nan: still found
    assert all_finite([]) and first_nonfinite({}) is None and first_nonfinite(None) is None
