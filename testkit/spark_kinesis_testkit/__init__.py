"""The harness of tests/, tools/ and bench/, never published: ``emulator`` (kinesis-mock on loopback,
read-back, session builder), ``faults`` (``FaultFront``) and ``procs`` (process trees from /proc)."""
