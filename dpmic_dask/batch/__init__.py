"""Batch jobs: the ``dpmic`` command line, job files, inputs and outputs, clusters."""
