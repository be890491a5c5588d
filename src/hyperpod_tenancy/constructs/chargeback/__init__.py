"""The chargeback pipeline's constructs: ``ChargebackPipeline`` and its parts (report store, CUR export, collectors and the monthly job, alerting)."""
