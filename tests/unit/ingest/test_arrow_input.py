"""The ingest function's input batches reach it as Arrow arrays once arrow_input.install() ran.

Decoding goes through PyFlink's own Arrow coder (the pure-Python build, which calls the
conversion by the same module-level name as the Cython build the worker uses); the real job's
worker logs which input it got (checked in tests/integration/test_ingest_pipeline.py).
"""

from __future__ import annotations

import importlib
import io
from types import ModuleType

import numpy as np
import pandas as pd  # type: ignore[import-untyped]
import pyarrow as pa
import pytest

pytest.importorskip("pyflink", reason="the flink extra: the input conversion patches PyFlink's Arrow coders")

from mixed_iceberg.ingest import arrow_input
from mixed_iceberg.ingest.metrics import IngestMetrics

pytestmark = pytest.mark.filterwarnings("ignore:.* has been deprecated since version:DeprecationWarning")

BATCH = pa.record_batch(
    [pa.array([0, 3, 3], pa.int32()), pa.array([7, 8, 9], pa.int64()), pa.array([b"{}", None, b'{"op":"c"}'], pa.binary())],
    names=["p", "o", "m"],
)


def _coders(monkeypatch: pytest.MonkeyPatch) -> list[ModuleType]:
    """The coder modules, their conversion restored after the test."""
    modules = []
    for name in ("pyflink.fn_execution.coder_impl_slow", "pyflink.fn_execution.coder_impl_fast"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        monkeypatch.setattr(module, "arrow_to_pandas", module.arrow_to_pandas)
        modules.append(module)
    return modules


def _decode(batch: pa.RecordBatch, field_types: list[object]) -> list[object]:
    from pyflink.fn_execution import coder_impl_slow
    from pyflink.fn_execution.stream_slow import InputStream
    from pyflink.table import DataTypes

    row = DataTypes.ROW([DataTypes.FIELD(f"f{i}", t) for i, t in enumerate(field_types)])  # type: ignore[arg-type]
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    data = sink.getvalue()
    coder = coder_impl_slow.ArrowCoderImpl(batch.schema, row, "UTC")
    decoded: list[object] = coder.decode_from_stream(InputStream(data), len(data))
    return decoded


def test_the_ingest_input_decodes_to_its_arrow_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyflink.table import DataTypes

    modules = _coders(monkeypatch)
    types = [DataTypes.INT(), DataTypes.BIGINT(), DataTypes.BYTES()]
    assert all(isinstance(s, pd.Series) for s in _decode(BATCH, types))  # PyFlink's conversion
    assert arrow_input.install()
    columns = _decode(BATCH, types)
    assert [type(c) for c in columns] == [pa.Int32Array, pa.Int64Array, pa.BinaryArray]
    assert [c.to_pylist() for c in columns] == [c.to_pylist() for c in BATCH.columns]  # type: ignore[attr-defined]
    assert all(getattr(m.arrow_to_pandas, "__wrapped__", None) is not None for m in modules)


def test_other_inputs_keep_pythons_conversion_and_install_wraps_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyflink.table import DataTypes

    modules = _coders(monkeypatch)
    assert arrow_input.install()
    assert arrow_input.install()
    swapped = modules[0].arrow_to_pandas
    assert swapped.__wrapped__.__module__ == "pyflink.table.utils"  # one layer around PyFlink's own
    other = pa.record_batch([pa.array([1, 2], pa.int32()), pa.array(["a", "b"])], names=["p", "s"])
    decoded = _decode(other, [DataTypes.INT(), DataTypes.STRING()])
    assert all(isinstance(s, pd.Series) for s in decoded)


class _Runtime:
    def __init__(self) -> None:
        self.batches: list[tuple[np.ndarray, np.ndarray, pa.Array]] = []
        self.metrics = IngestMetrics()

    def buffer(self, partitions: np.ndarray, offsets: np.ndarray, values: pa.Array) -> None:
        self.batches.append((partitions, offsets, values))


def test_eval_buffers_the_same_batch_from_arrow_or_pandas() -> None:
    from mixed_iceberg.ingest.flink import IngestFunction

    function = IngestFunction("{}")
    runtime = _Runtime()
    function._runtime, function._metrics, function._counters = runtime, IngestMetrics(), {}  # type: ignore[assignment]
    series = [c.to_pandas() for c in BATCH.columns]
    out_arrow = function.eval(*BATCH.columns)
    out_pandas = function.eval(*series)
    assert out_arrow.tolist() == out_pandas.tolist() == [0, 0, 0]
    (p1, o1, v1), (p2, o2, v2) = runtime.batches
    assert p1.dtype == p2.dtype == np.int32
    assert o1.dtype == o2.dtype == np.int64
    assert p1.tolist() == p2.tolist()
    assert o1.tolist() == o2.tolist()
    assert v1.equals(v2)
    assert v1.null_count == 1
