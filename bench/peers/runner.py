"""Run one system over a prepared workload and print its figures as one JSON object on stdout.

    python -P -m bench.peers.runner SYSTEM WORKLOAD_DIR SYSTEM_DIR [--option key=value ...] [--profile OUT.txt]

Executed by ``orchestrate.py`` as a subprocess with the system's own interpreter, the repository
on ``PYTHONPATH`` (this module needs only the standard library, numpy and pyarrow, and the
system's own library). It times every
commit, wall and CPU (and the system's own compaction after it, when the option asks for one),
times pyarrow alone writing and reading each batch (in memory: the floor to move the rows), records files
and bytes on disk after every streaming commit, and after each phase runs the three reads
(``--read-repeats`` times each; the first result is checksummed). It does not judge the answers:
the orchestrator compares the checksums with the oracle's. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.harness import Clock
from bench.peers.systems import SYSTEMS, System
from bench.peers.workload import Checksum


def disk(folder: Path) -> tuple[int, int]:
    files = size = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                size += os.path.getsize(os.path.join(root, name))
                files += 1
            except FileNotFoundError:  # removed by a concurrent optimizer thread
                pass
    return files, size


def io_written() -> int:
    """Bytes this process asked the kernel to write (``wchar``): data, metadata, catalogs, journals."""
    with open("/proc/self/io") as fh:
        return int(next(line for line in fh if line.startswith("wchar:")).split()[1])


def pyarrow_round_trip(batch: pa.Table) -> float:
    """CPU seconds pyarrow alone takes to write ``batch`` as zstd Parquet (in memory) and read it back."""
    clock = Clock.start()
    sink = pa.BufferOutputStream()
    pq.write_table(batch, sink, compression="zstd")
    pq.read_table(pa.BufferReader(sink.getvalue()))
    return clock.elapsed().cpu_s


def timed_read(system: System, repeats: int, **bounds: Any) -> tuple[list[float], dict[str, int]]:
    secs, checksum = [], {}
    for i in range(repeats):
        clock = Clock.start()
        out = system.read(**bounds)
        secs.append(clock.elapsed().wall_s)
        if i == 0:
            checksum = Checksum.of(out).as_dict()
        del out
    return secs, checksum


def run(args: argparse.Namespace) -> dict[str, Any]:
    workload = Path(args.workload)
    manifest = json.loads((workload / "manifest.json").read_text())
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    options = dict(o.split("=", 1) for o in args.option)
    system = SYSTEMS[args.system](folder, workload, options)
    lo, hi = manifest["key_range"]
    k_below = manifest["value_filter_k"]
    read_every = manifest["shape"]["read_every"]
    out: dict[str, Any] = {"system": args.system, "version": system.version(), "options": options, "phases": []}
    written_start = io_written()
    for phase in manifest["phases"]:
        name = phase["name"]
        commit_s: list[float] = []
        commit_cpu_s: list[float] = []  # process time of the commit call, all threads
        pyarrow_cpu_s = 0.0  # pyarrow alone writing and reading each batch (the floor to move the rows)
        change_rows = 0
        optimize_s: list[float] = []
        optimize_cpu_s: list[float] = []  # process time, all threads: moves less with other load
        optimize_kinds: list[str | None] = []
        optimize_floor_cpu_s: list[float | None] = []  # pyarrow alone doing each run's reads and writes
        optimize_types: dict[str, int] = {}
        series: list[dict[str, Any]] = []
        for i, rel in enumerate(phase["batches"]):
            path = workload / rel if name == "load" else workload / system.batch_dir / rel
            batch = pq.read_table(path)  # not timed: the input arrives in memory
            clock = Clock.start()
            system.load(batch) if name == "load" else system.commit(batch)
            took = clock.elapsed()
            commit_s.append(took.wall_s)
            commit_cpu_s.append(took.cpu_s)
            change_rows += batch.num_rows
            if name != "load":
                pyarrow_cpu_s += pyarrow_round_trip(batch)
                clock = Clock.start()
                kind = system.optimize()
                took = clock.elapsed()
                optimize_s.append(took.wall_s)
                optimize_cpu_s.append(took.cpu_s)
                optimize_kinds.append(kind)
                optimize_floor_cpu_s.append(system.optimize_io_floor())
                if kind:
                    optimize_types[kind] = optimize_types.get(kind, 0) + 1
            if name == "stream":
                files, size = disk(folder)
                point: dict[str, Any] = {"commit": i + 1, "files": files, "bytes": size, "commit_s": commit_s[-1]}
                if system.reads_mid_phase and str(i + 1) in manifest["stream_expected"]:
                    secs, checksum = timed_read(system, 1)
                    point |= {"read_s": secs[0], "checksum": checksum}
                series.append(point)
                if (i + 1) % read_every == 0:
                    print(
                        f"  {args.system}: stream commit {i + 1}: {files} files, read {point.get('read_s', 0):.3f} s",
                        file=sys.stderr,
                        flush=True,
                    )
        system.after_phase(name)
        reads = {}
        for query, bounds in (("full", {}), ("key_range", {"lo": lo, "hi": hi}), ("value_filter", {"k_below": k_below})):
            secs, checksum = timed_read(system, args.read_repeats, **bounds)
            reads[query] = {"secs": secs, "median_s": statistics.median(secs), "checksum": checksum}
        files, size = disk(folder)
        entry = {
            "name": name,
            "commits": len(commit_s),
            "upserts": phase["upserts"],
            "commit_s": commit_s,
            "commit_cpu_s": commit_cpu_s,
            "change_rows": change_rows,
            "pyarrow_round_trip_cpu_s": pyarrow_cpu_s,
            "optimize_s": optimize_s,
            "optimize_cpu_s": optimize_cpu_s,
            "optimize_kinds": optimize_kinds,
            "optimize_floor_cpu_s": optimize_floor_cpu_s,
            "optimize_types": optimize_types,
            "reads": reads,
            "files": files,
            "bytes": size,
            "bytes_written": io_written() - written_start,
            "series": series,
        }
        out["phases"].append(entry)
        out["peak_rss_mb"] = peak_rss_mb()
        if args.partial:  # what the orchestrator reports if this system runs out of time
            Path(args.partial).write_text(json.dumps(out))
        print(
            f"  {args.system}: {name}: {len(commit_s)} commits, {sum(commit_s):.2f} s + optimize {sum(optimize_s):.2f} s, "
            f"full read {reads['full']['median_s']:.3f} s, {files} files",
            file=sys.stderr,
            flush=True,
        )
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def peak_rss_mb() -> float:
    usage = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return usage / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("system", choices=sorted(SYSTEMS))
    parser.add_argument("workload")
    parser.add_argument("folder")
    parser.add_argument("--option", action="append", default=[], help="key=value passed to the adapter")
    parser.add_argument("--read-repeats", type=int, default=3)
    parser.add_argument("--partial", default=None, help="rewrite the results so far here after every phase")
    parser.add_argument("--profile", default=None, help="write a pyinstrument text profile of the run here")
    args = parser.parse_args()
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.005)
        profiler.start()
        result = run(args)
        profiler.stop()
        Path(args.profile).write_text(profiler.output_text(unicode=False, color=False, show_all=False))
    else:
        result = run(args)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
