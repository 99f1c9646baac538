"""Fuzz the CDC parser (``CdcParser.parse``): replay the corpus, then fuzz for a time budget.

    .venv/bin/python scripts/fuzz_parser.py --seconds 600              # atheris if installed
    .venv/bin/python scripts/fuzz_parser.py --seconds 60 --engine hypothesis
    .venv/bin/python scripts/fuzz_parser.py --replay-only

The target and its assertions: ``tests/support/fuzz_cdc.py``. The corpus
(``tests/corpus/cdc_parser/``, one batch per file) is replayed first, each file in order, its
name printed before it runs (a segfault kills this process: the last name printed is the
input). Then the engine: atheris (coverage-guided libFuzzer over the parser's Python code and
the corpus as seeds; new coverage goes to ``--new-inputs``, crashes to ``--artifacts``), or
where atheris is not installed hypothesis over the same framing. Exit status 0: nothing
failed. A failing input is printed as hex; add it to the corpus as a file to keep it.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CORPUS = ROOT / "tests" / "corpus" / "cdc_parser"
DICTIONARY = ROOT / "tests" / "corpus" / "cdc_parser.dict"


def replay(corpus: Path) -> int:
    from tests.support.fuzz_cdc import check_batch, check_pool, decode_batch

    check_pool()
    files = sorted(p for p in corpus.iterdir() if p.is_file() and not p.name.startswith("."))
    for path in files:
        print(f"replay {path.name}", flush=True)
        check_batch(decode_batch(path.read_bytes()))
    print(f"replayed {len(files)} corpus inputs", flush=True)
    return len(files)


def instrument() -> None:
    """Import the parser with atheris's coverage instrumentation (before anything imports it)."""
    atheris = importlib.import_module("atheris")  # no type stubs; optional
    if "mixed_iceberg.ingest.cdc" in sys.modules:
        raise RuntimeError("expected the parser not imported yet (instrumentation applies on import)")
    with atheris.instrument_imports(include=["mixed_iceberg.ingest", "tests.support.fuzz_cdc"]):
        import mixed_iceberg.ingest.cdc  # noqa: F401
        import tests.support.fuzz_cdc  # noqa: F401


def fuzz_atheris(seconds: float, corpus: Path, new_inputs: Path, artifacts: Path) -> None:
    atheris = importlib.import_module("atheris")

    from tests.support.fuzz_cdc import check_batch, decode_batch

    def one_input(data: bytes) -> None:
        check_batch(decode_batch(data))

    new_inputs.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    argv = [sys.argv[0], str(new_inputs), str(corpus), f"-max_total_time={max(1, int(seconds))}", "-max_len=4096",
            "-timeout=60", "-rss_limit_mb=4096", f"-artifact_prefix={artifacts}{os.sep}", "-print_final_stats=1",
            f"-dict={DICTIONARY}"]  # fmt: skip
    atheris.Setup(argv, one_input)
    atheris.Fuzz()  # exits the process: 0 when the budget ran out with nothing found


def fuzz_hypothesis(seconds: float) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tests.support.fuzz_cdc import POOL, SEP, check_batch, decode_batch

    pool_size = max(len(p) for p in POOL.values())
    ref = st.builds(lambda k: bytes([0xC0, k]), st.integers(0, pool_size - 1))
    spliced = st.builds(
        lambda k, at, b: bytes([0xC0, k, at]) + b, st.integers(0, pool_size - 1), st.integers(0, 255), st.binary(max_size=12)
    )
    json_ish = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(["op", "after", "before", "data", "id", "name", "payload", "ts_ms", "day"]) | st.text(max_size=4), children, max_size=4),
        max_leaves=8,
    ).map(lambda v: __import__("json").dumps(v).encode())  # fmt: skip
    message = st.one_of(
        st.binary(max_size=40), ref, spliced, json_ish, st.just(b"\xc0"), st.sampled_from([b"null", b" null", b"[]", b"\x80"])
    )
    data = st.builds(
        lambda flag, parts: bytes([flag]) + SEP.join(p.replace(SEP, b"") for p in parts),
        st.integers(0, 1),
        st.lists(message, max_size=12),
    )

    @settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck), derandomize=False)
    @given(data)
    def one_input(raw: bytes) -> None:
        check_batch(decode_batch(raw))

    deadline = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < deadline:
        one_input()
        rounds += 1
    print(f"hypothesis: {rounds} rounds of 200 examples in {seconds:.0f} s, nothing found", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="fuzzing budget after the replay")
    parser.add_argument("--engine", choices=["auto", "atheris", "hypothesis"], default="auto")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--new-inputs", type=Path, default=None, help="where atheris keeps inputs with new coverage")
    parser.add_argument("--artifacts", type=Path, default=None, help="where atheris writes crashing inputs")
    parser.add_argument("--replay-only", action="store_true")
    args = parser.parse_args()
    engine = args.engine
    if engine == "auto":
        engine = "atheris" if importlib.util.find_spec("atheris") is not None else "hypothesis"
    if engine == "atheris" and not args.replay_only:
        instrument()
    replay(args.corpus)
    if args.replay_only:
        return 0
    print(f"fuzzing with {engine} for {args.seconds:.0f} s", flush=True)
    if engine == "hypothesis":
        fuzz_hypothesis(args.seconds)
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="fuzz-cdc-"))
    fuzz_atheris(args.seconds, args.corpus, args.new_inputs or scratch / "new", args.artifacts or scratch / "artifacts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
