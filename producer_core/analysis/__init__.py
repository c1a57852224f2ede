"""Analyses over results: the capacity search (more move here in the layout change)."""
