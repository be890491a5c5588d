"""``hyperpod-tenancy chargeback``: the month's bill computed offline from the recorded usage and the cost report."""
