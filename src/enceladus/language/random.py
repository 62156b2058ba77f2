"""``tl.random``: the Philox random-number builtins as a module, as Triton exposes them
(``tl.random.rand(seed, offs)`` is ``tl.rand(seed, offs)``)."""

from .builtins import (  # noqa: F401
    pair_uniform_to_normal,
    philox,
    philox_impl,
    rand,
    rand4x,
    randint,
    randint4x,
    randn,
    randn4x,
    uint_to_uniform_float,
)

N_ROUNDS_DEFAULT = 10  # Philox rounds when n_rounds is not given (Triton's default)
