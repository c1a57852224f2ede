"""Connections to the cluster and the wire: requests, producer ids, transactions'
RPCs, connection errors, client logs."""
