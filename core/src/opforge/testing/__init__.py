"""Tools for testing plugins: :func:`opforge.testing.opcheck.check_op` checks a custom op's
kernels on every available device against the op's reference; the op conformance suite checks
devices on the standard opset: :mod:`~opforge.testing.models` (one-op models with seeded
inputs), :mod:`~opforge.testing.cases` (the case catalogue, one module per op family),
:mod:`~opforge.testing.conformance` (run a case on a device, compare with the reference),
:mod:`~opforge.testing.known_failures` (reviewed strict expected-failure lists) and
:mod:`~opforge.testing.coverage` (the op x device table)."""
