"""The offline chargeback's resource limits (a module of its own: the CLI reads them without loading DuckDB)."""

from __future__ import annotations

__all__ = ["DEFAULT_MEMORY_LIMIT"]

#: DuckDB's memory for a month's queries; beyond it DuckDB spills to a temporary folder of its own. A month of
#: 1,000 teams (26.8 M ClusterQueue snapshots) stays under 1 GiB of the whole process with it; more is faster.
DEFAULT_MEMORY_LIMIT = "700MB"
