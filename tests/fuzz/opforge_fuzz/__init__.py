"""opforge's fuzz targets (see ../README.md): one module per target under ``targets/``, the
harness that decides what a finding is, structure-aware mutators, and the engines that drive
them (atheris, coverage-guided; and a seeded random engine for the test suite)."""
