"""Writing one store's files: data files, position deletes, their layout and partition paths."""
