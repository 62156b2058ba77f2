"""``tl.random``: the Philox random-number builtins as a module, as Triton exposes them
(``tl.random.rand(seed, offs)`` is ``tl.rand(seed, offs)``)."""

from .builtins import philox, rand, randint, randint4x, randn  # noqa: F401

N_ROUNDS_DEFAULT = 10  # Philox rounds when n_rounds is not given (Triton's default)
