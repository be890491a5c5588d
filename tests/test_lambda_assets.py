"""A Lambda asset ships what its handler imports: the import reader sees every form Python runs, and nothing else."""

from __future__ import annotations

from hyperpod_tenancy.constructs._private.lambda_assets import _import_statements, lambda_asset_files

SOURCE = '''"""A docstring whose prose says: from the policy import nothing, and import this sentence too."""

from __future__ import annotations

import hyperpod_tenancy.runtime.kube_api
from hyperpod_tenancy.chargeback import (
    engine,  # the engine
    model,
)
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hyperpod_tenancy.policy import Platform


def handler() -> None:
    from hyperpod_tenancy.runtime.remote_write import push  # noqa: PLC0415 - at run time only
'''


def test_the_reader_keeps_real_imports_and_leaves_type_checking_ones_out() -> None:
    statements = _import_statements(SOURCE)
    assert "import hyperpod_tenancy.runtime.kube_api" in statements
    assert any(s.startswith("from hyperpod_tenancy.chargeback import (") and "model" in s for s in statements)
    assert any("remote_write import push" in s for s in statements), "an import inside a function runs too"
    assert not any("hyperpod_tenancy.policy" in s for s in statements), "TYPE_CHECKING imports never run"


def test_an_asset_holds_its_handler_and_what_it_imports_only() -> None:
    files = lambda_asset_files("test", "hyperpod_tenancy.runtime.node_inventory")
    assert sorted(files) == [
        "hyperpod_tenancy/__init__.py",
        "hyperpod_tenancy/runtime/__init__.py",
        "hyperpod_tenancy/runtime/kube_api.py",
        "hyperpod_tenancy/runtime/node_inventory.py",
    ]
    assert files["hyperpod_tenancy/__init__.py"] == b'"""test (Lambda asset)."""\n'
