"""A team's constructs: ``TeamTenant`` and its parts (identity, Studio, chargeback)."""
