"""Tools for testing plugins: :func:`opforge.testing.opcheck.check_op` checks a custom op's
kernels on every available device against the op's reference."""
