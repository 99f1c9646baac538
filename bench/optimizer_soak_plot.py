"""The optimizer soak's plot: ``python -m bench.optimizer_soak_plot RESULT.json OUT.png``.

Live files per table, merged-read seconds per table and the optimizer backlog (from the
processes' and tasks' times) over time, one line per setting, one column per table count, from
a stored ``bench.optimizer_soak`` run. Only the standard library, the harness and matplotlib: ``bench.optimizer_soak`` runs it with whichever interpreter
has matplotlib (the project's ``.venv`` has none; ``bench/peers/.envs/orchestrator`` does).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.optimizer_soak_figures import backlog_series

STYLES = {0: ("tab:gray", "off (no optimizer job)"), 1: ("tab:blue", "parallelism 1"), 2: ("tab:orange", "parallelism 2")}


def draw(data: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = data["detail"]["runs"]
    summaries = data["detail"]["summaries"]
    counts = sorted({r["tables"] for r in runs})
    fig, axes = plt.subplots(3, len(counts), figsize=(6.5 * len(counts), 9), sharex="col", squeeze=False)
    for col, count in enumerate(counts):
        for run in (r for r in runs if r["tables"] == count):
            color, label = STYLES.get(run["parallelism"], (None, f"parallelism {run['parallelism']}"))
            t = [s["t"] for s in run["samples"]]
            files = [
                statistics.mean(x["change_files"] + x["data_files"] + x["delete_files"] for x in s["tables"])
                for s in run["samples"]
            ]
            reads = [statistics.mean(x["read_s"] for x in s["tables"]) for s in run["samples"]]
            axes[0][col].plot(t, files, color=color, label=label, marker=".")
            axes[1][col].plot(t, reads, color=color, label=label, marker=".")
            if run.get("processes"):
                backlog = [(0.0, 0), *backlog_series(run["processes"]), (run["wall_s"], 0)]
                axes[2][col].step([b[0] for b in backlog], [b[1] for b in backlog], where="post", color=color, label=label)
            if run.get("writes_stopped_s") is not None:
                for ax in axes[:, col]:
                    ax.axvline(run["writes_stopped_s"], color=color, linestyle=":", linewidth=1)
        bound = next((summaries[r["setting"]]["bound"] for r in runs if r["tables"] == count), None)
        if bound is not None:
            axes[0][col].axhline(bound, color="black", linestyle="--", linewidth=1, label=f"bound ({bound})")
        title = "1 table" if count == 1 else f"{count} tables (ingest jobs)"
        axes[0][col].set_title(f"{title}: live files per table (mean over tables)")
        axes[1][col].set_title("merged read per table (s)")
        axes[2][col].set_title("optimizer backlog (tasks planned, not finished)")
        axes[2][col].set_xlabel("seconds since the stream started (dotted: writes stopped)")
        for ax in axes[:, col]:
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    env = data["environment"]
    fig.suptitle(
        f"bench.optimizer_soak at {str(env.get('commit'))[:7]}, {env.get('started_at', '')[:16]}, "
        f"load {env.get('load_average_start')} -> {env.get('load_average_end')}",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(out, dpi=90)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m bench.optimizer_soak_plot RESULT.json OUT.png", file=sys.stderr)
        return 2
    draw(json.loads(Path(argv[0]).read_text()), Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
