"""Where mixed-iceberg's time goes on the peers workload: pyinstrument profiles per activity.

```
.venv/bin/python -m bench.peers.profile_mixed --workload /tmp/peers-workload   # generated if empty
```

Runs the peers adapter (``systems.Mixed``, with the options of ``mixed-iceberg (optimizing)``) over
the peers workload in order, and profiles four activities with one pyinstrument profiler each:
the big-batch commits, the stream phase's commits, the optimizer runs of the stream phase, and
full merged reads after the stream. Each profile is written as text (the call tree, time
spent per frame) to ``bench/results/profiles/<activity>.txt``, and the top frames by own time
are printed. Sampling adds overhead to call-heavy code; the exclusive-timer split of a small
commit is ``bench/commit_profile.py``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
from pyinstrument import Profiler

from bench.harness import RESULTS_DIR
from bench.peers.orchestrate import entries
from bench.peers.systems import Mixed
from bench.peers.workload import Shape, write_workload

RESULTS = RESULTS_DIR / "profiles"  # git-ignored: call trees, not figures
ACTIVITIES = ("big_commits", "stream_commits", "stream_optimizer", "full_reads")


def _top_frames(profiler: Profiler, count: int) -> list[tuple[float, str]]:
    """The ``count`` frames with the most own time (seconds, 'function file:line')."""
    session = profiler.last_session
    if session is None:
        return []
    own: dict[str, float] = {}
    stack = [session.root_frame()]
    while stack:
        frame = stack.pop()
        if frame is None:
            continue
        stack.extend(frame.children)
        if frame.function.startswith("["):
            continue  # pyinstrument's synthetic "[self]" frames: their time is their parent's own
        label = f"{frame.function} {Path(frame.file_path or '?').name}:{frame.line_no}"
        own[label] = own.get(label, 0.0) + frame.total_self_time
    return sorted(((s, label) for label, s in own.items()), reverse=True)[:count]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", type=Path, default=None, help="a peers workload folder (generated if empty)")
    parser.add_argument("--quick", action="store_true", help="the --quick workload shape")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--reads", type=int, default=5, help="full reads profiled after the stream")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    workload = args.workload or Path(tempfile.mkdtemp(prefix="mixed-iceberg-peers-workload-"))
    if not (workload / "manifest.json").exists():
        write_workload(workload, Shape.quick() if args.quick else Shape.full(), args.seed)
    manifest = json.loads((workload / "manifest.json").read_text())
    # The same table properties as the benchmark's "mixed-iceberg (optimizing)" entry.
    options = next(e for e in entries(manifest["shape"]["rows"]) if e.label == "mixed-iceberg (optimizing)").options
    system = Mixed(Path(tempfile.mkdtemp(prefix="mixed-iceberg-profile-")), workload, options)
    profilers = {name: Profiler(interval=0.0005) for name in ACTIVITIES}

    def profiled(name: str, fn, *fn_args):  # type: ignore[no-untyped-def]
        profiler = profilers[name]
        profiler.start()
        try:
            return fn(*fn_args)
        finally:
            profiler.stop()

    for phase in manifest["phases"]:
        name = phase["name"]
        for rel in phase["batches"]:
            batch = pq.read_table(workload / rel if name == "load" else workload / system.batch_dir / rel)
            if name == "load":
                system.load(batch)
                continue
            if name == "big":
                profiled("big_commits", system.commit, batch)
            elif name == "stream":
                profiled("stream_commits", system.commit, batch)
            else:
                system.commit(batch)
            if name == "stream":
                profiled("stream_optimizer", system.optimize)
            else:
                system.optimize()
    for _ in range(args.reads):
        profiled("full_reads", system.read)

    args.output.mkdir(parents=True, exist_ok=True)
    for name, profiler in profilers.items():
        text = profiler.output_text(unicode=False, color=False, show_all=False)
        (args.output / f"{name}.txt").write_text(text)
        print(f"\n## {name} ({args.output / (name + '.txt')})")
        for seconds, label in _top_frames(profiler, 12):
            print(f"  {seconds:7.3f} s  {label}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
