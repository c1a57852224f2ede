"""Distributed runs and analysis on Spark (the optional `kbatch[spark]` extra).

`plan` and `merge` are pure Python and never import pyspark; `session`, `spark_runner`
and `producer_core.analysis.analyze` import it lazily, inside functions, so kbatch without the
extra works (and says which extra to install when a Spark feature is asked for).
"""
