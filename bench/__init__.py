"""Benchmarks of mixed-iceberg: scripts that print figures next to a baseline from the same run.

Each benchmark is a module run from the repository root, ``python -m bench.<name>`` (see
``bench/README.md``); :mod:`bench.harness` captures the environment, times, renders the Markdown
table and writes the run as JSON into ``bench/results/``, the committed history. This package
imports nothing itself: the peers benchmark imports it from interpreters without the library.
"""
