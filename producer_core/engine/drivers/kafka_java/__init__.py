"""Mode `kafka-java`: Apache Kafka's own Java producer, driven by kbatch's workload.

`settings` maps kbatch's settings to the producer's properties, `driver` resolves the jars
and compiles the Java driver, `protocol` is the versioned pipe protocol, and `run` turns
the driver's output into kbatch's Results.
"""
