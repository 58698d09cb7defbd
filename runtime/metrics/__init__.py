"""The metrics layer: what the emulator's raw counters mean.  runtime/metrics/counters.py decodes
them once (``CounterView``) into a launch's counts and ``Metrics``; runtime/metrics/registry.py
declares each metric once (kind, formula, how it combines over launches, unit, label).  It reads
only the counter layout of ``runtime.abi`` and the ISA table, so every layer above -- the
emulator, the models, the reports -- shares one definition of each metric."""
