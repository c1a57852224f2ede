"""Analyses over results: the capacity search, the run table's columns (more of analysis
moves here in the layout change)."""
