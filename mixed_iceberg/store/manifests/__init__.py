"""A store's metadata, no data: live files of a snapshot, the delete index, the scan plan."""
