"""Command line: ``mixed-iceberg optimize|status <table>``."""
