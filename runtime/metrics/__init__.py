"""The metrics layer: what the emulator's raw counters mean (runtime/metrics/counters.py decodes them
into a launch's ``Metrics``).  It reads only the counter layout of ``runtime.abi`` and the
ISA table, so every layer above -- the emulator, the models, the reports -- shares one
definition of each metric."""
