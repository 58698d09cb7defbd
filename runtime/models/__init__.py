"""The models layer: what a finished run's results imply about time on a GPU -- the timing
estimate (timing.py, with the architecture files in arch/) and the cache model that replays
a launch's address trace (cache_model.py, cache_replay.py).  It reads the emulator's results;
the reports above it present the estimates."""
