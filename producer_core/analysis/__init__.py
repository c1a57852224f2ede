"""Reading many runs' results: the run table's columns (more of analysis moves here)."""
