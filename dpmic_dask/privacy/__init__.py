"""Privacy: typed costs, secure samplers, mechanisms, selection rules and ledgers.

Nothing here reads data: calibration uses public quantities only, noise is drawn
from the exact samplers of :mod:`.noise`, and budgets are charged through
:mod:`.accounting`.
"""
