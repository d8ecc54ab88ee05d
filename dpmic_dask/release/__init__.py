"""Releases: one request, one plan, one precheck, one charge, noise, a report.

:mod:`.plan` builds and runs a release plan (``[private bounds] -> [selection]
-> values``); :mod:`.accessor` is the ``frame.dpmic`` facade over it.
"""
