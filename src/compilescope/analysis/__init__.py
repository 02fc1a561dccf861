"""Pure analysis over frozen records: guard-failure parsing, regimes, accounting."""
