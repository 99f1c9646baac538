"""The peers benchmark: mixed-iceberg beside pypaimon, DuckLake, delta-rs and pyiceberg, one run.

``orchestrate`` runs in ``bench/peers/.envs/orchestrator``, each ``runner`` in its system's venv
(``envs.sh``), all as modules from the repository root: ``python -m bench.peers.orchestrate``.
``runner``, ``systems`` and ``workload`` import only the standard library, numpy, pyarrow and the
harness at the top, so they load in every peer's environment.
"""
