"""The ``mixed-iceberg`` command (docs/cli.md).

Modules, one job each: ``main`` (the parser, logging, the error boundary), ``exits`` (exit
codes), ``render`` (results as text or JSON), ``progress`` (stderr progress lines), and one per
verb group: ``catalogs`` (catalogs, tables), ``describe`` (describe, properties, create),
``status``, ``optimize`` (optimize, maintenance), ``groups`` (groups, optimizers, processes,
optimizer).
"""
