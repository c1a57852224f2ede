"""What a run measured: the counters, the metric catalog, histograms, intervals,
the request log, the results document, its schema check and its I/O."""
