"""``rulegen import KIND FILE…``: other tools' rules and SLOs → rulegen specs.

Why a package: every source shares the result types (``model.py``), the writer of specs
with comments (``writer.py``) and the command (``command.py``); each KIND is one module,
``rulegen.importer.<kind>``, with ``import_files(files, options) -> ImportResult``, looked up
when the command runs, so a source that is missing is one clear error, not an import crash.
"""

KINDS = ("prometheus", "sloth", "openslo", "pyrra")
"""The sources ``rulegen import`` takes, each the name of its module in this package."""
