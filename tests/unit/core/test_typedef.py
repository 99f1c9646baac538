"""Change actions: one type, its names by Amoro's byte ids, and the Arrow lookups derived from it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from mixed_iceberg.typedef import ACTION_NAMES, ChangeAction, action_codes, action_names


def test_change_action_names_and_codes_have_one_home() -> None:
    """The CDC parser, the change writer and the LogStore format take names and codes from
    ``typedef``; the codes are Amoro's byte ids."""
    assert ACTION_NAMES == tuple(ChangeAction.from_byte(i).value for i in range(4)) == ("+I", "-U", "+U", "-D")
    names = pa.chunked_array([pa.array(["-D", "+I", None, "x"], pa.large_string())])
    assert action_codes(names).tolist() == [3, 0, -1, -1]
    assert action_names(np.array([2, 1], np.int8)).to_pylist() == ["+U", "-U"]
