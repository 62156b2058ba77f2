"""``triton.tools.mxfp`` under the compatibility entry: host helpers for OCP microscaling (MX) data, in torch.

Apple GPUs have no MX units, but ``tl.dot_scaled`` is provided (its operands are dequantized into float32), so
Triton's programs and tests that prepare MX data on the host need these helpers. Written from the OCP MX v1.0
formats, not from Triton's code:

- ``MXFP4Tensor``: E2M1 codes, one per uint8 element (bit 3 the sign, bits 2-1 the exponent with bias 1, bit 0 the
  mantissa), values ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}. Converting from floats rounds to nearest, ties to the even code,
  and saturates at ±6 (infinities included); NaN has no code and is refused. ``to_packed_tensor(dim)`` puts two
  codes in a byte along ``dim``, the first in the low nibble (``tl.dot_scaled``'s ``"e2m1"`` layout).
- ``MXScaleTensor``: E8M0 scales, one per uint8: ``2 ** (code - 127)``, code 255 is NaN. Converting from floats
  takes the nearest power of two (in log2, clamped to 2**-127 .. 2**127); zero, negatives, infinities and NaN
  become 255.
"""

from __future__ import annotations

from typing import Any

# the eight E2M1 magnitudes, indexed by the code's low three bits
_E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
E8M0_NAN = 255


def _torch() -> Any:
    import torch

    return torch


class MXFP4Tensor:
    """E2M1 (mxfp4) values as one 4-bit code per uint8 element (``.data``).

    ``MXFP4Tensor(values)`` encodes a float tensor; ``MXFP4Tensor(size=shape, device=...)`` makes zeros, and
    ``.random()`` fills them with random codes (returning the tensor)."""

    def __init__(self, data: Any = None, size: Any = None, device: Any = None) -> None:
        torch = _torch()
        if data is not None:
            values = torch.as_tensor(data, device=device)
            self.device = values.device
            self.data = self._encode(values.to(torch.float32))
        elif size is not None:
            self.device = torch.device(device) if device is not None else torch.device("cpu")
            self.data = torch.zeros(size, dtype=torch.uint8, device=self.device)
        else:
            raise ValueError("MXFP4Tensor needs values (a float tensor) or size=")
        self.size = tuple(self.data.shape)

    @staticmethod
    def _encode(x: Any) -> Any:
        torch = _torch()
        if torch.isnan(x).any():
            raise ValueError("MXFP4Tensor: E2M1 has no NaN; the values contain NaN")
        sign = torch.signbit(x).to(torch.uint8) << 3
        mag = x.abs().clamp(max=6.0)
        table = torch.tensor(_E2M1_VALUES, dtype=torch.float32, device=x.device)
        # the nearest magnitude; a tie goes to the even code (its mantissa bit 0)
        dist = (mag.unsqueeze(-1) - table).abs()
        best = dist.min(dim=-1, keepdim=True).values
        ties = dist == best
        codes = torch.arange(8, device=x.device)
        even_tie = ties & (codes % 2 == 0)
        pick = torch.where(even_tie.any(dim=-1, keepdim=True), even_tie, ties)
        code = (pick.to(torch.uint8) * codes.to(torch.uint8)).amax(dim=-1) if x.numel() else \
            torch.zeros(x.shape, dtype=torch.uint8, device=x.device)
        return (sign | code.to(torch.uint8)).to(torch.uint8)

    def random(self) -> MXFP4Tensor:
        """Random codes (every code equally likely, -0 included); returns ``self``."""
        torch = _torch()
        self.data = torch.randint(0, 16, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype: Any) -> Any:
        """The values as a ``dtype`` tensor (exact in any float type)."""
        torch = _torch()
        table = torch.tensor(_E2M1_VALUES, dtype=torch.float32, device=self.data.device)
        mag = table[(self.data & 7).to(torch.long)]
        return torch.where((self.data & 8) != 0, -mag, mag).to(dtype)

    def to_packed_tensor(self, dim: int) -> Any:
        """Two codes per uint8 along ``dim`` (the first in the low nibble); an odd length is padded with a 0 code."""
        torch = _torch()
        assert 0 <= dim < self.data.dim(), f"dim {dim} is not a dimension of a {self.data.dim()}-d tensor"
        d = self.data.movedim(dim, -1)
        if d.shape[-1] % 2:
            d = torch.cat([d, torch.zeros(*d.shape[:-1], 1, dtype=torch.uint8, device=d.device)], dim=-1)
        packed = d[..., 0::2] | (d[..., 1::2] << 4)
        return packed.movedim(-1, dim).contiguous()

    def unpack_packed_tensor(self, packed: Any, dim: int, original_shape: Any) -> Any:
        """The codes of a tensor made by ``to_packed_tensor(dim)``, cropped to ``original_shape``."""
        torch = _torch()
        p = packed.movedim(dim, -1)
        codes = torch.stack([p & 0xF, p >> 4], dim=-1).reshape(*p.shape[:-1], 2 * p.shape[-1])
        codes = codes[..., :original_shape[dim]]
        return codes.movedim(-1, dim).contiguous()


class MXScaleTensor:
    """E8M0 scales (``2 ** (code - 127)``, 255 NaN) as uint8 codes (``.data``).

    ``MXScaleTensor(values)`` encodes a float tensor; ``MXScaleTensor(size=shape, device=...)`` makes codes of 1.0,
    and ``.random(low=, high=)`` fills them with random codes whose values lie in [low, high] (returning the
    tensor)."""

    def __init__(self, data: Any = None, size: Any = None, device: Any = None) -> None:
        torch = _torch()
        if data is not None:
            values = torch.as_tensor(data, device=device).to(torch.float32)
            self.device = values.device
            ok = torch.isfinite(values) & (values > 0)
            exp = torch.round(torch.log2(torch.where(ok, values, torch.ones_like(values)))).clamp(-127, 127)
            self.data = torch.where(ok, exp + 127, torch.full_like(exp, E8M0_NAN)).to(torch.uint8)
        elif size is not None:
            self.device = torch.device(device) if device is not None else torch.device("cpu")
            self.data = torch.full(size, 127, dtype=torch.uint8, device=self.device)
        else:
            raise ValueError("MXScaleTensor needs values (a float tensor) or size=")
        self.size = tuple(self.data.shape)

    def random(self, low: float | None = None, high: float | None = None) -> MXScaleTensor:
        """Random codes with values in [low, high] (default: every finite value, 2**-127 .. 2**127)."""
        import math

        torch = _torch()
        lo = 0 if low is None else max(0, min(254, math.ceil(math.log2(low)) + 127))
        hi = 254 if high is None else max(0, min(254, math.floor(math.log2(high)) + 127))
        if lo > hi:
            raise ValueError(f"MXScaleTensor.random: no power of two lies in [{low}, {high}]")
        self.data = torch.randint(lo, hi + 1, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype: Any) -> Any:
        """The scales as a ``dtype`` tensor (NaN for code 255)."""
        torch = _torch()
        exp = self.data.to(torch.float32) - 127
        out = torch.pow(torch.tensor(2.0, dtype=torch.float32, device=self.data.device), exp)
        return torch.where(self.data == E8M0_NAN, torch.full_like(out, float("nan")), out).to(dtype)
