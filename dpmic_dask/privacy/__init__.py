"""Privacy: typed costs, secure samplers, mechanisms, selection rules and ledgers.

Nothing here reads data: calibration uses public quantities only, noise is drawn
from the exact samplers of :mod:`.noise`, and budgets are charged through
:mod:`.accounting`.
"""

# The SQL ledger registers its URL schemes (sqlite, postgresql) with
# accounting.register_ledger_scheme when imported; importing it here, with the
# package, fills the registry before any ledger URL is read, so accounting (the
# registry) never imports the ledgers that fill it.
from dpmic_dask.privacy import ledger as _ledger  # noqa: E402, F401
