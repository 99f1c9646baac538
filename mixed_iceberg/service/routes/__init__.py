"""The REST catalog's routes, one module per resource (config, namespaces, tables, transactions)."""
