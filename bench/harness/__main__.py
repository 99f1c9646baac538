"""``python -m bench.harness FILE.json ...``: the Markdown table of stored runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.harness.markdown import markdown
from bench.harness.results import read_run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.harness", description=__doc__)
    parser.add_argument("files", nargs="+", type=Path, help="result files written by the harness")
    args = parser.parse_args(argv)
    for i, path in enumerate(args.files):
        try:
            run = read_run(path)
        except ValueError as exc:  # a file from before the harness: plain JSON of its own shape
            print(f"{exc}; read it as plain JSON", file=sys.stderr)
            return 1
        print(("\n" if i else "") + f"`{path}`\n\n" + markdown(run), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
