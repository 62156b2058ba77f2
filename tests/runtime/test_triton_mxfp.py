"""triton.tools.mxfp under the compatibility entry: Enceladus's own MXFP4Tensor / MXScaleTensor (OCP MX E2M1 codes
and E8M0 scales in torch), checked against the format definitions and fed to tl.dot_scaled on every path."""

import math

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from paths import run_on_all_paths

torch = pytest.importorskip("torch")
from enceladus.triton.mxfp import MXFP4Tensor, MXScaleTensor  # noqa: E402

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def test_every_e2m1_code_decodes_and_encodes_back():
    codes = torch.arange(16, dtype=torch.uint8)
    t = MXFP4Tensor(size=(16,))
    t.data = codes
    values = t.to(torch.float32)
    assert values.tolist() == E2M1 + [-v for v in E2M1]
    assert torch.equal(MXFP4Tensor(values).data, codes)  # -0.0 keeps its sign code (8)


def test_e2m1_rounds_to_nearest_even_and_saturates():
    cases = {0.25: 0.0, 0.26: 0.5, 0.75: 1.0, 1.25: 1.0, 1.75: 2.0, 2.5: 2.0, 3.5: 4.0, 5.0: 4.0, 5.1: 6.0,
             7.0: 6.0, 1e30: 6.0, math.inf: 6.0, -math.inf: -6.0, -0.3: -0.5, -2.9: -3.0}
    got = MXFP4Tensor(torch.tensor(list(cases))).to(torch.float32).tolist()
    assert got == list(cases.values())
    with pytest.raises(ValueError, match="no NaN"):
        MXFP4Tensor(torch.tensor([1.0, math.nan]))


@pytest.mark.parametrize("shape,dim", [((7, 5), 1), ((6, 3), 0), ((2, 3, 9), 2), ((1,), 0)])
def test_packing_puts_the_first_code_in_the_low_nibble(shape, dim):
    t = MXFP4Tensor(size=shape).random()
    packed = t.to_packed_tensor(dim=dim)
    codes = t.data.numpy()
    pad = [(0, 0)] * len(shape)
    pad[dim] = (0, shape[dim] % 2)
    c = np.moveaxis(np.pad(codes, pad), dim, -1)
    want = np.moveaxis(c[..., 0::2] | (c[..., 1::2] << 4), -1, dim)
    np.testing.assert_array_equal(packed.numpy(), want)
    assert torch.equal(t.unpack_packed_tensor(packed, dim=dim, original_shape=shape), t.data)
    with pytest.raises(AssertionError):
        t.to_packed_tensor(dim=len(shape))


def test_e8m0_scales():
    s = MXScaleTensor(torch.tensor([1.0, 2.0, 0.25, 2.0**-127, 2.0**127, 3.0, 0.0, -1.0, math.nan, math.inf]))
    assert s.data.tolist() == [127, 128, 125, 0, 254, 129, 255, 255, 255, 255]  # 3.0: log2 1.58 rounds to 2
    back = s.to(torch.float32)
    assert back[:5].tolist() == [1.0, 2.0, 0.25, 2.0**-127, 2.0**127] and torch.isnan(back[6:]).all()
    r = MXScaleTensor(size=(2000,)).random(high=64.0)
    assert int(r.data.min()) >= 0 and int(r.data.max()) == 133  # 2**6 = 64 is the largest allowed
    assert torch.equal(MXScaleTensor(r.to(torch.float32)).data, r.data)
    with pytest.raises(ValueError, match="no power of two"):
        MXScaleTensor(size=(4,)).random(low=3.0, high=3.5)


@enceladus.jit
def mx_matmul_kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk, rs = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K // 2), tl.arange(0, K // 32)
    a = tl.load(a_ptr + rm[:, None] * (K // 2) + rk[None, :])  # e2m1, packed along K by to_packed_tensor(dim=1)
    b = tl.load(b_ptr + rn[:, None] * (K // 2) + rk[None, :])  # [N, K // 2], as Triton's test: used as b.T
    sa = tl.load(sa_ptr + rm[:, None] * (K // 32) + rs[None, :])
    sb = tl.load(sb_ptr + rn[:, None] * (K // 32) + rs[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot_scaled(a, sa, "e2m1", b.T, sb, "e2m1"))


def test_the_helpers_feed_dot_scaled_on_every_path():
    M, N, K = 16, 32, 64
    torch.manual_seed(17)
    a, b = MXFP4Tensor(size=(M, K)).random(), MXFP4Tensor(size=(N, K)).random()
    sa, sb = MXScaleTensor(size=(M, K // 32)).random(0.25, 8.0), MXScaleTensor(size=(N, K // 32)).random(0.25, 8.0)
    ref = ((a.to(torch.float64) * sa.to(torch.float64).repeat_interleave(32, dim=1))
           @ (b.to(torch.float64) * sb.to(torch.float64).repeat_interleave(32, dim=1)).T).numpy()
    args = [a.to_packed_tensor(dim=1).numpy(), sa.data.numpy(), b.to_packed_tensor(dim=1).numpy(),
            sb.data.numpy()]
    run_on_all_paths(mx_matmul_kernel, (1,), lambda: (*[x.copy() for x in args], np.zeros((M, N), np.float32)),
                     lambda *_: {4: ref.astype(np.float32)}, rtol=1e-6, atol=1e-6 * float(np.abs(ref).max()),
                     constexprs={"M": M, "N": N, "K": K})
