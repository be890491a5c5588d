"""Sphinx configuration of the documentation site (Markdown pages through MyST).

Build it with ``make docs`` (``sphinx-build -W --keep-going -n -b html docs docs/_build/html``);
``tests/test_docs.py`` builds it the same way in ``make test`` and fails on any warning.
"""

project = "cdk-hyperpod-tenancy"
author = "cdk-hyperpod-tenancy contributors"
extensions = ["myst_parser", "sphinxcontrib.mermaid"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
# ``[text](page.md#a-heading)`` links resolve to headings down to level 3, and are checked (-n)
myst_heading_anchors = 3
# the architecture diagram is a ```mermaid fence, as GitHub renders it
myst_fence_as_directive = ["mermaid"]
html_theme = "furo"
html_title = "cdk-hyperpod-tenancy"
