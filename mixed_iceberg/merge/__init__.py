"""The merge: pure Arrow and NumPy kernels that every reader and writer calls, without I/O.

``latest.py`` keeps the latest row per key (LSN order), ``engines.py`` what each merge engine
makes of a key's rows (``aggregates.py`` and ``segments.py`` are its parts), ``equality.py``
compares rows of any type, and ``runs.py`` holds a value per file read. Callers read the files;
this package only sees Arrow tables and arrays.
"""
