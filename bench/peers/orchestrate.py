"""Peers benchmark: mixed-iceberg next to pypaimon, DuckLake, delta-rs and pyiceberg upsert, one run.

    make bench-peers                                   # full run
    bench/peers/.envs/orchestrator/bin/python -m bench.peers.orchestrate --quick    # from the repository root

The workload is generated once (numpy seed) into Parquet files in a temporary folder; every
system then runs it in its own subprocess, with its own interpreter from ``bench/peers/.envs/``
(mixed-iceberg with the project's ``.venv``), one system at a time. Every read's row count and
checksum is compared with the pyarrow oracle's; a wrong answer fails the run (exit 1) after the
report is written. A peer that is not installed, crashes or times out is reported as such and
the others go on. The harness prints every system's figures beside the pyarrow reference's and
writes the run to ``bench/results/peers-<date>-<commit>.json`` (``--output`` elsewhere), each
system's raw results in its detail; the two PNG plots go beside it (``<stem>.read.png``,
``<stem>.files.png``, git-ignored).

Each runner is ``python -P -m bench.peers.runner`` with the repository at the end of
``PYTHONPATH``: ``-P`` keeps the working directory off ``sys.path``, so a library tree put first
on ``PYTHONPATH`` (another revision, for a before/after run) is the one the mixed-iceberg runner
imports, as when the runner was a script.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import ROOT, Clock, Figure, Run, capture_environment, publish
from bench.peers.workload import Shape, write_workload

ENVS = ROOT / "bench" / "peers" / ".envs"
REFERENCE = "pyarrow reference"

MB = 1024 * 1024
PHASES = ("load", "big", "small", "stream")
GOALS = {
    "big_write_vs_paimon": 1.5,
    "small_commit_median_ms": 15.0,
    "read_vs_ducklake": 0.5,
    "read_flat_ratio": 1.25,
    "write_amplification": 5.0,
    "read_vs_pyarrow": 1.5,
}


@dataclass(frozen=True, slots=True)
class Entry:
    """One column of the report: a system, its interpreter and adapter options."""

    label: str
    system: str
    env: str  # a folder under .envs, or "project" for the project's .venv
    options: dict[str, str] = field(default_factory=dict)
    note: str = ""

    @property
    def python(self) -> Path:
        return ROOT / ".venv" / "bin" / "python" if self.env == "project" else ENVS / self.env / "bin" / "python"


def entries(rows: int, mixed_props: dict[str, str] | None = None) -> list[Entry]:
    # The tuned setting of bench/optimizing_soak.py: 8 MB target per million base rows keeps the
    # bulk-loaded files out of the fragment class; min-plan-interval 0 because commits come back
    # to back here, where a streaming writer's checkpoints would be a minute apart.
    target = str(max(1, round(8 * rows / 1_000_000)) * MB)
    on = {"prop.self-optimizing.target-size": target, "prop.self-optimizing.min-plan-interval": "0"}
    on |= {f"prop.{key}": value for key, value in (mixed_props or {}).items()}
    return [
        Entry(
            "pyarrow reference",
            "reference",
            "orchestrator",
            note="one Parquet file per batch; reads the merged state as one file",
        ),
        Entry(
            "mixed-iceberg (optimizing)",
            "mixed",
            "project",
            on,
            "table.optimizing.run() after every commit"
            + "".join(f"; {key}={value}" for key, value in sorted((mixed_props or {}).items())),
        ),
        Entry(
            "mixed-iceberg (off)", "mixed", "project", {"prop.self-optimizing.enabled": "false"}, "self-optimizing.enabled=false"
        ),
        Entry("pypaimon native", "paimon", "paimon", {"native": "true", "bucket": "2"}, "2 buckets, *.native.enabled"),
        Entry("DuckLake", "ducklake", "ducklake", {}, "MERGE INTO, no compaction"),
        Entry("delta-rs", "deltalake", "deltalake", {}, "merge (copy-on-write), no compaction"),
        Entry("pyiceberg upsert", "pyiceberg", "pyiceberg", {}, "Table.upsert (copy-on-write)"),
    ]


# --------------------------------------------------------------------------- running and checking


def run_entry(entry: Entry, workload: Path, scratch: Path, args: argparse.Namespace) -> dict[str, Any]:
    failed = ENVS / f"{entry.env}.failed"
    if not entry.python.exists() or failed.exists():
        return {"status": "not installed", "detail": failed.read_text().strip() if failed.exists() else str(entry.python)}
    folder = scratch / entry.label.replace(" ", "_").replace("(", "").replace(")", "")
    cmd = [
        str(entry.python),
        "-P",
        "-m",
        "bench.peers.runner",
        entry.system,
        str(workload),
        str(folder),
        "--read-repeats",
        str(args.read_repeats),
    ]
    cmd += [a for k, v in entry.options.items() for a in ("--option", f"{k}={v}")]
    partial = scratch / f"{folder.name}.partial.json"
    cmd += ["--partial", str(partial)]
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([path, str(ROOT)] if path else [str(ROOT)])}
    print(f"== {entry.label}", file=sys.stderr, flush=True)
    clock = Clock.start()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=args.timeout, check=False, env=env)
    except subprocess.TimeoutExpired:
        status = f"timed out after {args.timeout} s"
        if not partial.exists():
            return {"status": status}
        result = json.loads(partial.read_text())
        done = [p["name"] for p in result["phases"]]
        return result | {"status": "partial", "detail": f"{status}; finished phases {done}", "wall_s": float(args.timeout)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    wall = clock.elapsed().wall_s
    if proc.returncode != 0 or not proc.stdout.strip():
        return {"status": f"failed (exit {proc.returncode})", "wall_s": wall}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result |= {"status": "ok", "wall_s": wall}
    return result


def verify(result: dict[str, Any], manifest: dict[str, Any]) -> list[str]:
    """Every mismatch between the system's answers and the oracle's, as 'phase/query: expected X, found Y'."""
    wrong = []
    for phase in result["phases"]:
        for query, read in phase["reads"].items():
            want = manifest["expected"][phase["name"]][query]
            if read["checksum"] != want:
                wrong.append(f"{phase['name']}/{query}: expected {want}, found {read['checksum']}")
        for point in phase["series"]:
            if "checksum" in point and point["checksum"] != manifest["stream_expected"][str(point["commit"])]:
                wrong.append(
                    f"stream commit {point['commit']}: expected {manifest['stream_expected'][str(point['commit'])]}, found {point['checksum']}"
                )
    return wrong


# --------------------------------------------------------------------------- figures


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def system_figures(result: dict[str, Any], manifest: dict[str, Any]) -> dict[str, Any]:
    phases = {p["name"]: p for p in result["phases"]}
    out: dict[str, Any] = {}
    for name, p in phases.items():
        commit = sum(p["commit_s"])
        # Per-run kinds and CPU seconds (absent from results written before they were recorded).
        kinds = p.get("optimize_kinds") or [None] * len(p["optimize_s"])
        cpu = p.get("optimize_cpu_s") or [0.0] * len(p["optimize_s"])
        floor = [s for s in p.get("optimize_floor_cpu_s") or [] if s is not None]
        rows = p.get("change_rows")

        def per_row(seconds: float | None, rows: int | None = rows) -> float | None:
            return seconds / rows * 1e6 if rows and seconds is not None else None

        out[name] = {
            "rows_per_s": p["upserts"] / commit if commit else None,
            "rows_per_s_with_optimize": p["upserts"] / (commit + sum(p["optimize_s"])) if commit else None,
            "commit_ms_median": statistics.median(p["commit_s"]) * 1000,
            "commit_ms_p95": pct(p["commit_s"], 0.95) * 1000,
            "optimize_s": sum(p["optimize_s"]),
            "optimize_cpu_s": sum(cpu),
            "minor_s": sum(s for s, k in zip(p["optimize_s"], kinds, strict=True) if k == "minor"),
            "minor_cpu_s": sum(s for s, k in zip(cpu, kinds, strict=True) if k == "minor"),
            "optimize_types": p["optimize_types"],
            # CPU per change row: the commit, the optimizer after it, pyarrow alone writing + reading the batch.
            "write_cpu_us_per_row": per_row(sum(p["commit_cpu_s"]) if "commit_cpu_s" in p else None),
            "optimize_cpu_us_per_row": per_row(sum(cpu)),
            "pyarrow_cpu_us_per_row": per_row(p.get("pyarrow_round_trip_cpu_s")),
            # pyarrow alone reading the files the optimizer read and writing the rows it wrote.
            "optimize_floor_cpu_us_per_row": per_row(sum(floor)) if floor else None,
            "read_s": {q: r["median_s"] for q, r in p["reads"].items()},
            "files": p["files"],
            "bytes": p["bytes"],
        }
    small = phases.get("small", {}).get("commit_s", []) + phases.get("stream", {}).get("commit_s", [])
    series = [pt for pt in phases.get("stream", {}).get("series", []) if "read_s" in pt]
    last = result["phases"][-1]
    out["small_commit_ms_median"] = statistics.median(small) * 1000 if small else None
    out["small_commit_ms_p95"] = pct(small, 0.95) * 1000 if small else None
    out["bytes_written"] = last["bytes_written"]
    out["write_amplification"] = last["bytes_written"] / manifest["input_parquet_bytes"]
    out["stream_read_first_s"] = series[0]["read_s"] if series else None
    out["stream_read_last_s"] = series[-1]["read_s"] if series else None
    out["peak_rss_mb"] = result.get("peak_rss_mb")
    return out


def _metrics() -> list[tuple[str, str, Any]]:
    """(figure, unit, getter of a system's figures) in the order of the report."""
    out: list[tuple[str, str, Any]] = [(f"{p}: rows/s", "rows/s", lambda f, p=p: f[p]["rows_per_s"]) for p in PHASES]
    for phase in ("big", "small", "stream"):
        out += [
            (f"{phase}: commit, median", "ms", lambda f, p=phase: f[p]["commit_ms_median"]),
            (f"{phase}: commit, p95", "ms", lambda f, p=phase: f[p]["commit_ms_p95"]),
        ]
    out += [
        ("small + stream: commit, median", "ms", lambda f: f["small_commit_ms_median"]),
        ("small + stream: commit, p95", "ms", lambda f: f["small_commit_ms_p95"]),
    ]
    out += [(f"{p}: optimizer", "s", lambda f, p=p: f[p]["optimize_s"]) for p in ("big", "small", "stream")]
    out += [
        ("stream: write CPU per change row", "us", lambda f: f["stream"]["write_cpu_us_per_row"]),
        ("stream: optimizer CPU per change row", "us", lambda f: f["stream"]["optimize_cpu_us_per_row"]),
    ]
    out += [(f"after {p}: full read", "s", lambda f, p=p: f[p]["read_s"]["full"]) for p in PHASES]
    out += [
        ("after stream: key-range read", "s", lambda f: f["stream"]["read_s"]["key_range"]),
        ("after stream: value-filter read", "s", lambda f: f["stream"]["read_s"]["value_filter"]),
        ("stream: first full read", "s", lambda f: f["stream_read_first_s"]),
        ("stream: last full read", "s", lambda f: f["stream_read_last_s"]),
    ]
    for phase in PHASES:
        out += [
            (f"after {phase}: files on disk", "files", lambda f, p=phase: f[p]["files"]),
            (f"after {phase}: on disk", "MB", lambda f, p=phase: f[p]["bytes"] / MB),
        ]
    out += [
        ("bytes written", "MB", lambda f: f["bytes_written"] / MB),
        ("write amplification", "x", lambda f: f["write_amplification"]),
        ("peak RSS", "MB", lambda f: f["peak_rss_mb"]),
    ]
    return out


def peer_figures(res: dict[str, Any]) -> list[Figure]:
    """Every system's figures beside the pyarrow reference's, metric first (the rows to compare
    are adjacent); a phase a system did not reach is not measured (``None``)."""

    def safe(get: Any, figures: dict[str, Any] | None) -> float | None:
        if figures is None:
            return None
        try:
            value = get(figures)
        except (KeyError, TypeError, ZeroDivisionError):  # a phase the system did not reach
            return None
        return None if value is None else float(value)

    ok = {label: r["figures"] for label, r in res.items() if r["status"] in ("ok", "partial")}
    reference = ok.pop(REFERENCE, None)
    figures = [
        Figure(f"{metric} ({label})", safe(get, figures), unit, safe(get, reference))
        for metric, unit, get in _metrics()
        for label, figures in ok.items()
    ]
    # Issue 18: the optimizer's CPU per change row beside the same system's write, and beside
    # pyarrow alone writing and reading the rows, measured in the same process.
    for label, f in ok.items():
        optimizer = safe(lambda f: f["stream"]["optimize_cpu_us_per_row"], f)
        if not optimizer:
            continue
        for baseline, key in (
            ("its write's", "write_cpu_us_per_row"),
            ("pyarrow write+read", "pyarrow_cpu_us_per_row"),
            ("pyarrow doing its reads and writes", "optimize_floor_cpu_us_per_row"),
        ):
            figures.append(
                Figure(
                    f"stream: optimizer CPU per change row, baseline {baseline} ({label})",
                    optimizer,
                    "us",
                    safe(lambda f, key=key: f["stream"][key], f),
                )
            )
    return figures


def peer_notes(report: dict[str, Any]) -> list[str]:
    cfg, res = report["config"], report["results"]
    shape = cfg["shape"]
    notes = [
        f"load {shape['rows']:,} rows; {shape['big'][0]} x {shape['big'][1]:,} upserts (big); {shape['small'][0]} x "
        f"{shape['small'][1]:,} (small); {shape['stream'][0]} x {shape['stream'][1]:,} (stream); half updates of random "
        "existing keys, half inserts. Systems ran one after another, each in its own process and environment",
        "every read was checked against the pyarrow oracle (row count + checksum): "
        + ("all answers correct" if not report["wrong"] else f"WRONG ANSWERS: {sorted(report['wrong'])}"),
        f"read seconds are the median of {cfg['read_repeats']} reads after each phase (the first is checked); the stream "
        f"plot has one read every {shape['read_every']} commits; load is one run; rows/s = upserts / summed commit "
        "seconds (optimizer time separate); write amplification = bytes the process wrote (wchar: data, metadata, "
        f"catalog, compaction) / bytes of the same rows as zstd Parquet ({report['input_parquet_bytes'] / MB:,.1f} MB)",
    ]
    for label, r in res.items():
        if r["status"] == "ok" or r["status"] == "partial":
            notes.append(f"{label}: {r['version']}; {r['note']}" + (f"; {r['detail']}" if r["status"] == "partial" else ""))
        else:
            notes.append(f"{label}: {r['status']} {r.get('detail', '')}".rstrip())
    for goal in report["goals"]:
        met = "yes" if goal["met"] else ("NO" if goal["met"] is False else "-")
        issue = "" if goal["goal"].startswith("(issue") else "(issue 5) "
        notes.append(f"goal {issue}{goal['goal']}: {goal['figure']} {met}")
    return notes


def goals(res: dict[str, Any]) -> list[dict[str, Any]]:
    def fig(label: str) -> dict[str, Any] | None:
        r = res.get(label)
        return r["figures"] if r and r["status"] == "ok" else None  # goals need every phase

    mixed, paimon, duck = fig("mixed-iceberg (optimizing)"), fig("pypaimon native"), fig("DuckLake")
    out: list[dict[str, Any]] = []

    def add(goal: str, value: float | None, ok: bool | None, fmt: str) -> None:
        out.append({"goal": goal, "value": value, "met": ok, "figure": "-" if value is None else fmt.format(value)})

    if mixed is None:
        return out
    ratio = mixed["big"]["rows_per_s"] / paimon["big"]["rows_per_s"] if paimon else None
    add(
        "big-batch writes >= 1.5x pypaimon native",
        ratio,
        None if ratio is None else ratio >= GOALS["big_write_vs_paimon"],
        "{:.2f}x",
    )
    small = mixed["small_commit_ms_median"]
    add("small-commit median <= 15 ms", small, small <= GOALS["small_commit_median_ms"], "{:.1f} ms")
    ratio = mixed["stream"]["read_s"]["full"] / duck["stream"]["read_s"]["full"] if duck else None
    add(
        "merged read <= 0.5x DuckLake's (after stream)",
        ratio,
        None if ratio is None else ratio <= GOALS["read_vs_ducklake"],
        "{:.2f}x",
    )
    first, last = mixed["stream_read_first_s"], mixed["stream_read_last_s"]
    flat = last / first if first else None
    add(
        "merged read flat over the stream (last / first read)",
        flat,
        None if flat is None else flat <= GOALS["read_flat_ratio"],
        "{:.2f}x",
    )
    amp = mixed["write_amplification"]
    add("write amplification <= 5x", amp, amp <= GOALS["write_amplification"], "{:.1f}x")
    stream = mixed["stream"]
    if stream.get("write_cpu_us_per_row"):
        ratio = stream["optimize_cpu_us_per_row"] / stream["write_cpu_us_per_row"]
        add("(issue 18) optimizer CPU per change row <= the write's", ratio, ratio <= 1.0, "{:.2f}x")
        if stream.get("optimize_floor_cpu_us_per_row"):
            # Not a goal: how much of the write's CPU pyarrow alone needs for the optimizer's reads and
            # writes; what the optimizer spends above it is planning, merging, indexing and commits.
            floor = stream["optimize_floor_cpu_us_per_row"] / stream["write_cpu_us_per_row"]
            add(
                "(issue 18, floor) pyarrow doing the optimizer's reads and writes, per change row, / the write's",
                floor,
                None,
                "{:.2f}x",
            )
    reference = fig(REFERENCE)
    if reference is not None:
        ratio = stream["read_s"]["full"] / reference["stream"]["read_s"]["full"]
        add("(issue 18) merged read after the stream <= 1.5x pyarrow's", ratio, ratio <= GOALS["read_vs_pyarrow"], "{:.2f}x")
    return out


def plots(results: dict[str, Any], stem: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for key, ylabel, suffix in (("read_s", "full merged read (s)", "read"), ("files", "files on disk", "files")):
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for label, r in results.items():
            stream = next((p for p in r.get("phases", []) if p["name"] == "stream"), None)
            if r["status"] not in ("ok", "partial") or stream is None:
                continue
            pts = [(pt["commit"], pt[key]) for pt in stream["series"] if key in pt]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="." if key == "read_s" else None, label=label)
        ax.set_xlabel("streaming commit")
        ax.set_ylabel(ylabel)
        if key == "files":
            ax.set_yscale("log")
        ax.set_title(f"{ylabel} across the streaming commits")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        path = stem.with_name(f"{stem.name}.{suffix}.png")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(str(path))
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k rows, 3 x 10k, 10 x 1k, 40 x 1k upserts")
    parser.add_argument("--only", action="append", default=None, help="run only these labels (repeatable, substring match)")
    parser.add_argument(
        "--rows",
        type=int,
        default=None,
        help="rows of the bulk load, the phases unchanged (10000000: do costs grow with the table?)",
    )
    parser.add_argument("--read-repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument(
        "--timeout", type=int, default=3600, help="seconds per system; past it the system is reported with the phases it finished"
    )
    parser.add_argument(
        "--mixed-prop",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a table property of mixed-iceberg (optimizing), over the defaults (repeatable): a policy's cost beside its reads",
    )
    parser.add_argument("--keep", action="store_true", help="keep the workload folder")
    parser.add_argument("--output", type=Path, help="the run's JSON (default bench/results/peers-<date>-<commit>.json)")
    args = parser.parse_args()
    shape = Shape.quick() if args.quick else Shape.full()
    if args.rows:
        shape = dataclasses.replace(shape, rows=args.rows)
    mixed_props = dict(p.split("=", 1) for p in args.mixed_prop)
    scratch = Path(tempfile.mkdtemp(prefix="mixed-iceberg-peers-"))
    environment = capture_environment()
    try:
        print(f"workload: {shape} into {scratch}", file=sys.stderr, flush=True)
        manifest = write_workload(scratch / "workload", shape, args.seed)
        results: dict[str, Any] = {}
        wrong: dict[str, list[str]] = {}
        for entry in entries(shape.rows, mixed_props):
            if args.only and not any(o in entry.label for o in args.only):
                continue
            r = run_entry(entry, scratch / "workload", scratch, args)
            r["note"] = entry.note
            if r["status"] in ("ok", "partial"):
                bad = verify(r, manifest)
                if bad:
                    wrong[entry.label] = bad
                    r["wrong"] = bad
                r["figures"] = system_figures(r, manifest)
            print(
                f"   {entry.label}: {r['status']}"
                + (f", {len(wrong.get(entry.label, []))} wrong answers" if entry.label in wrong else ""),
                file=sys.stderr,
                flush=True,
            )
            results[entry.label] = r
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    report = {
        "config": {
            "quick": args.quick,
            "seed": args.seed,
            "read_repeats": args.read_repeats,
            "timeout": args.timeout,
            "only": args.only,
            "mixed_props": mixed_props,
            "shape": manifest["shape"],
        },
        "input_parquet_bytes": manifest["input_parquet_bytes"],
        "results": results,
        "wrong": wrong,
    }
    report["goals"] = goals(results)
    run = Run(
        "peers",
        environment.finished(),
        peer_figures(results),
        baseline=f"the {REFERENCE}: pq.write_table of each batch; reads of the merged state as one Parquet file",
        config=report["config"],
        notes=peer_notes(report),
        detail={key: value for key, value in report.items() if key != "config"},
    )
    written = publish(run, args.output)
    drawn = plots(results, written.with_suffix(""))
    print(f"plots: {', '.join(drawn)}", file=sys.stderr)
    if wrong:
        print(f"WRONG ANSWERS from {sorted(wrong)}: the run fails", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
