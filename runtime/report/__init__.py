"""The report layer: what users run and read -- batches of launches from inputs and specs
(batch.py, inputs.py), text/CSV/JSON tables (tables.py), HTML (html.py), profile diffs
(diff.py) and the source-line view (source_view.py).  Nothing below imports it."""
