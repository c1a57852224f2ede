"""kbatch's client-driver pipe protocol (docs/architecture/client-drivers.md): the one way a
real client running out of process (the Java producer, Go's franz-go, sarama, kafka-go)
takes kbatch's workload and reports back. `protocol` is the wire format, `run` the run
that streams a workload through any driver speaking it and turns its lines into Results.
"""
