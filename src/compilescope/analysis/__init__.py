"""Pure analysis over frozen records: regimes, accounting, causes, advice, comparison."""
