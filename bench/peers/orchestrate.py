"""Peers benchmark: mixed-iceberg next to pypaimon, DuckLake, delta-rs and pyiceberg upsert, one run.

    make bench-peers                                   # full run
    bench/peers/.envs/orchestrator/bin/python bench/peers/orchestrate.py --quick

The workload is generated once (numpy seed) into Parquet files in a temporary folder; every
system then runs it in its own subprocess, with its own interpreter from ``bench/peers/.envs/``
(mixed-iceberg with the project's ``.venv``), one system at a time. Every read's row count and
checksum is compared with the pyarrow oracle's; a wrong answer fails the run (exit 1) after the
report is written. A peer that is not installed, crashes or times out is reported as such and
the others go on. Results: ``bench/results/peers[.quick].{json,md}`` and two PNG plots.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ENVS = HERE / ".envs"
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(HERE))
from workload import Shape, write_workload  # noqa: E402

MB = 1024 * 1024
PHASES = ("load", "big", "small", "stream")
GOALS = {
    "big_write_vs_paimon": 1.5,
    "small_commit_median_ms": 15.0,
    "read_vs_ducklake": 0.5,
    "read_flat_ratio": 1.25,
    "write_amplification": 5.0,
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


def entries(rows: int) -> list[Entry]:
    # The tuned setting of bench/optimizing_soak.py: 8 MB target per million base rows keeps the
    # bulk-loaded files out of the fragment class; min-plan-interval 0 because commits come back
    # to back here, where a streaming writer's checkpoints would be a minute apart.
    target = str(max(1, round(8 * rows / 1_000_000)) * MB)
    on = {"prop.self-optimizing.target-size": target, "prop.self-optimizing.min-plan-interval": "0"}
    return [
        Entry(
            "pyarrow reference",
            "reference",
            "orchestrator",
            note="one Parquet file per batch; reads the merged state as one file",
        ),
        Entry("mixed-iceberg (optimizing)", "mixed", "project", on, "table.optimizing.run() after every commit"),
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
        str(HERE / "runner.py"),
        entry.system,
        str(workload),
        str(folder),
        "--read-repeats",
        str(args.read_repeats),
    ]
    cmd += [a for k, v in entry.options.items() for a in ("--option", f"{k}={v}")]
    partial = scratch / f"{folder.name}.partial.json"
    cmd += ["--partial", str(partial)]
    print(f"== {entry.label}", file=sys.stderr, flush=True)
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=args.timeout, check=False)
    except subprocess.TimeoutExpired:
        status = f"timed out after {args.timeout} s"
        if not partial.exists():
            return {"status": status}
        result = json.loads(partial.read_text())
        done = [p["name"] for p in result["phases"]]
        return result | {"status": "partial", "detail": f"{status}; finished phases {done}", "wall_s": float(args.timeout)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    wall = time.perf_counter() - started
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


def figures(result: dict[str, Any], manifest: dict[str, Any]) -> dict[str, Any]:
    phases = {p["name"]: p for p in result["phases"]}
    out: dict[str, Any] = {}
    for name, p in phases.items():
        commit = sum(p["commit_s"])
        # Per-run kinds and CPU seconds (absent from results written before they were recorded).
        kinds = p.get("optimize_kinds") or [None] * len(p["optimize_s"])
        cpu = p.get("optimize_cpu_s") or [0.0] * len(p["optimize_s"])
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


def _n(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1e6:.2f} M" if value >= 1e6 else f"{value / 1e3:,.0f} k"


def markdown(report: dict[str, Any]) -> str:
    cfg, res = report["config"], report["results"]
    shape = cfg["shape"]
    ok = {k: v for k, v in res.items() if v["status"] in ("ok", "partial")}
    lines = [
        f"# Peers benchmark{' (--quick)' if cfg['quick'] else ''}",
        "",
        f"Load {shape['rows']:,} rows; {shape['big'][0]} x {shape['big'][1]:,} upserts (big); {shape['small'][0]} x "
        f"{shape['small'][1]:,} (small); {shape['stream'][0]} x {shape['stream'][1]:,} (stream). Half updates of random "
        f"existing keys, half inserts; seed {cfg['seed']}. {report['environment']['cpus']} CPUs, load average "
        f"{report['environment']['loadavg_start']} at start, {report['environment']['loadavg_end']} at end. Systems ran one "
        "after another, each in its own process and environment. Every read was checked against the pyarrow oracle "
        "(row count + checksum): "
        + ("**all answers correct**." if not report["wrong"] else f"**WRONG ANSWERS: {sorted(report['wrong'])}**."),
        "",
        f"Read seconds are the median of {cfg['read_repeats']} reads after each phase (the first is checked); the stream "
        f"plot has one read every {shape['read_every']} commits. Load is one run. Commit latency is the median / p95 over "
        "the phase's commits. rows/s = upserts / summed commit seconds (optimizer time separate). Write amplification = "
        "bytes the process wrote (`wchar`: data, metadata, catalog, compaction) / bytes of the same rows as zstd Parquet "
        f"({report['input_parquet_bytes'] / MB:,.1f} MB).",
        "",
    ]
    for label, r in res.items():
        if r["status"] != "ok":
            lines.append(f"- **{label}**: {r['status']} {r.get('detail', '')} (missing cells: '-')")
    header = "| | " + " | ".join(ok) + " |"
    rule = "|---|" + "---:|" * len(ok)
    lines += ["", header, rule]

    def row(title: str, cell: Any) -> None:
        def safe(f: dict[str, Any]) -> str:
            try:
                return str(cell(f))
            except (KeyError, TypeError, ZeroDivisionError):  # a phase the system did not reach
                return "-"

        lines.append(f"| {title} | " + " | ".join(safe(v["figures"]) for v in ok.values()) + " |")

    lines.append("| version | " + " | ".join(v["version"] for v in ok.values()) + " |")
    for phase in PHASES:
        row(f"{phase}: rows/s", lambda f, p=phase: _rate(f[p]["rows_per_s"]))
    for phase in ("big", "small", "stream"):
        row(
            f"{phase}: commit ms median / p95",
            lambda f, p=phase: f"{_n(f[p]['commit_ms_median'], 1)} / {_n(f[p]['commit_ms_p95'], 1)}",
        )
    row(
        "small+stream commit ms median / p95",
        lambda f: f"{_n(f['small_commit_ms_median'], 1)} / {_n(f['small_commit_ms_p95'], 1)}",
    )
    row("optimizer s (big / small / stream)", lambda f: " / ".join(_n(f[p]["optimize_s"], 1) for p in ("big", "small", "stream")))
    for phase in PHASES:
        row(f"after {phase}: full read s", lambda f, p=phase: _n(f[p]["read_s"]["full"], 3))
    row("after stream: key-range read s", lambda f: _n(f["stream"]["read_s"]["key_range"], 3))
    row("after stream: value-filter read s", lambda f: _n(f["stream"]["read_s"]["value_filter"], 3))
    row("stream: first / last full read s", lambda f: f"{_n(f['stream_read_first_s'], 3)} / {_n(f['stream_read_last_s'], 3)}")
    for phase in PHASES:
        row(f"after {phase}: files / MB on disk", lambda f, p=phase: f"{f[p]['files']:,} / {f[p]['bytes'] / MB:,.1f}")
    row("bytes written MB (write amp.)", lambda f: f"{f['bytes_written'] / MB:,.0f} ({f['write_amplification']:.1f}x)")
    row("peak RSS MB", lambda f: f"{f['peak_rss_mb']:,.0f}")
    ref = ok.get("pyarrow reference")
    if ref:
        rf = ref["figures"]
        row("big rows/s vs reference", lambda f: _n(f["big"]["rows_per_s"] / rf["big"]["rows_per_s"], 2) + "x")
        row(
            "stream full read vs reference", lambda f: _n(f["stream"]["read_s"]["full"] / rf["stream"]["read_s"]["full"], 1) + "x"
        )
    lines += ["", "Notes: " + "; ".join(f"{k}: {v['note']}" for k, v in res.items() if v.get("note")), ""]
    lines += ["## Goals (issue 5)", "", "| goal | figure | met |", "|---|---:|:-:|"]
    for goal in report["goals"]:
        lines.append(
            f"| {goal['goal']} | {goal['figure']} | {'yes' if goal['met'] else ('no' if goal['met'] is False else '-')} |"
        )
    return "\n".join(lines) + "\n"


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
    return out


def plots(report: dict[str, Any], stem: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for key, ylabel, suffix in (("read_s", "full merged read (s)", "read"), ("files", "files on disk", "files")):
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for label, r in report["results"].items():
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
    parser.add_argument("--read-repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument(
        "--timeout", type=int, default=3600, help="seconds per system; past it the system is reported with the phases it finished"
    )
    parser.add_argument("--keep", action="store_true", help="keep the workload folder")
    args = parser.parse_args()
    shape = Shape.quick() if args.quick else Shape.full()
    stem = RESULTS / ("peers.quick" if args.quick else "peers")
    scratch = Path(tempfile.mkdtemp(prefix="mixed-iceberg-peers-"))
    environment = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
    }
    try:
        print(f"workload: {shape} into {scratch}", file=sys.stderr, flush=True)
        manifest = write_workload(scratch / "workload", shape, args.seed)
        results: dict[str, Any] = {}
        wrong: dict[str, list[str]] = {}
        for entry in entries(shape.rows):
            if args.only and not any(o in entry.label for o in args.only):
                continue
            r = run_entry(entry, scratch / "workload", scratch, args)
            r["note"] = entry.note
            if r["status"] in ("ok", "partial"):
                bad = verify(r, manifest)
                if bad:
                    wrong[entry.label] = bad
                    r["wrong"] = bad
                r["figures"] = figures(r, manifest)
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
    environment["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    report = {
        "benchmark": "peers",
        "config": {"quick": args.quick, "seed": args.seed, "read_repeats": args.read_repeats, "shape": manifest["shape"]},
        "environment": environment,
        "input_parquet_bytes": manifest["input_parquet_bytes"],
        "results": results,
        "wrong": wrong,
    }
    report["goals"] = goals(results)
    text = markdown(report)
    RESULTS.mkdir(parents=True, exist_ok=True)
    report["plots"] = plots(report, stem)
    stem.with_name(stem.name + ".md").write_text(text)
    stem.with_name(stem.name + ".json").write_text(json.dumps(report, indent=1) + "\n")
    print(text)
    print(f"results: {stem}.json, {stem}.md, {', '.join(report['plots'])}", file=sys.stderr)
    if wrong:
        print(f"WRONG ANSWERS from {sorted(wrong)}: the run fails", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
