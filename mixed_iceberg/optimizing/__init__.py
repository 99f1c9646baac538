"""Self-optimizing (evaluate, plan, execute, commit) and table maintenance."""
