"""The one harness every benchmark uses: environment, timing, typed results, JSON and Markdown.

A benchmark measures, builds a :class:`Run` (the environment and a list of :class:`Figure`, each
with the baseline measured in the same run where it has one) and publishes it: the Markdown
table on stdout, the JSON in ``bench/results/<bench>-<date>-<shortcommit>.json``::

    from bench.harness import Figure, Run, capture_environment, publish, timed

    environment = capture_environment()
    _, naive = timed(lambda: sorted(range(100_000), key=str))
    _, ours = timed(lambda: sorted(map(str, range(100_000))))
    run = Run(
        "sort_demo",
        environment.finished(),
        [Figure("sort 100k ints as strings", ours.wall_s, "s", baseline=naive.wall_s)],
        baseline="sorted() with key=str",
    )
    publish(run)

``python -m bench.harness FILE.json ...`` prints a stored run's table again. The harness needs
only the standard library: the peers benchmark's orchestrator imports it from its own venv.
"""

from bench.harness.environment import ROOT, Environment, capture_environment
from bench.harness.markdown import format_number, markdown
from bench.harness.publish import publish
from bench.harness.results import RESULTS_DIR, Figure, Run, read_run, result_path, write_run
from bench.harness.timing import Clock, Timing, Timings, best_of, timed

__all__ = [
    "RESULTS_DIR",
    "ROOT",
    "Clock",
    "Environment",
    "Figure",
    "Run",
    "Timing",
    "Timings",
    "best_of",
    "capture_environment",
    "format_number",
    "markdown",
    "publish",
    "read_run",
    "result_path",
    "timed",
    "write_run",
]
