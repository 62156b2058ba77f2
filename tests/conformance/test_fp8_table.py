"""fp8 casts, bit for bit, against the committed table of Triton's GPU conversion rules (data/fp8_table.csv, made
by data/make_fp8_table.py from an independent model of each format; its header records the Triton source read).

Every fp8 type: all 256 codes to float32, and a sweep of float32 inputs (every fp8 value, the midpoints between
neighbours and their float32 neighbours, subnormals, overflow, zeros, +-inf, NaNs, random values) to fp8 with
each rounding Triton has, on the interpreter and the compiled (cpu) path.
"""

from pathlib import Path

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from paths import run_on_all_paths

TABLE = Path(__file__).parent / "data" / "fp8_table.csv"
TYPES = {"float8e4nv": tl.float8e4nv, "float8e5": tl.float8e5, "float8e4b15": tl.float8e4b15,
         "float8e4b8": tl.float8e4b8, "float8e5b16": tl.float8e5b16}


def _table() -> tuple[list[str], np.ndarray, np.ndarray, dict[str, tuple[np.ndarray, np.ndarray]]]:
    columns: list[str] = []
    enc_in, enc_out, dec = [], [], {}
    for line in TABLE.read_text().splitlines():
        if line.startswith("# encode,"):
            columns = line.split(",")[2:]
        if line.startswith("#"):
            continue
        row = line.split(",")
        if row[0] == "encode":
            enc_in.append(int(row[1], 16))
            enc_out.append([int(c, 16) for c in row[2:]])
        else:
            codes, bits = dec.setdefault(row[1], ([], []))
            codes.append(int(row[2], 16))
            bits.append(-1 if row[3] == "nan" else int(row[3], 16))
    decode = {k: (np.array(c, np.uint8), np.array(b, np.int64)) for k, (c, b) in dec.items()}
    return columns, np.array(enc_in, np.uint32).view(np.float32), np.array(enc_out, np.uint8), decode


COLUMNS, INPUTS, CODES, DECODE = _table()
BLOCK = 1024


@enceladus.jit
def encode_kernel(x_ptr, out_ptr, n, DTYPE: tl.constexpr, ROUNDING: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x.to(DTYPE, fp_downcast_rounding=ROUNDING), mask=m)


@enceladus.jit
def decode_kernel(c_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(c_ptr + offs).to(tl.float32))


def test_table_covers_every_format_and_the_hard_inputs():
    assert sorted(DECODE) == sorted(TYPES) and all(len(c) == 256 for c, _ in DECODE.values())
    assert len(COLUMNS) == 7 and CODES.shape == (len(INPUTS), 7)
    bits = INPUTS.view(np.uint32)
    assert {0x7F800000, 0xFF800000, 0x00000000, 0x80000000, 0x00000001} <= set(bits.tolist())
    assert np.isnan(INPUTS).sum() >= 6 and len(INPUTS) > 5000
    assert "# source: triton-lang/triton" in TABLE.read_text()


@pytest.mark.parametrize("column", COLUMNS)
def test_float32_to_fp8_matches_the_table(column):
    name, rounding = column.split(":")
    ty = TYPES[name]
    want = CODES[:, COLUMNS.index(column)]
    n = len(INPUTS)

    def make_args():
        return INPUTS.copy(), np.zeros(n, np.uint8).view(ty.to_numpy()), n

    run_on_all_paths(encode_kernel, (triton_cdiv(n, BLOCK),), make_args, lambda x, out, n: {1: want},
                     constexprs={"DTYPE": ty, "ROUNDING": rounding, "BLOCK": BLOCK})


@pytest.mark.parametrize("name", sorted(TYPES))
def test_fp8_to_float32_matches_the_table(name):
    ty = TYPES[name]
    codes, bits = DECODE[name]

    def check(args, expected, path):
        got = args[1].view(np.uint32).astype(np.int64)
        nan = bits == -1
        assert np.isnan(args[1][nan]).all(), f"{name} on {path}: NaN codes {codes[nan]} did not give NaN"
        bad = np.nonzero(~nan & (got != bits))[0]
        assert not len(bad), f"{name} on {path}: codes {codes[bad][:8]} gave {got[bad][:8]} not {bits[bad][:8]}"

    run_on_all_paths(decode_kernel, (1,), lambda: (codes.view(ty.to_numpy()).copy(), np.zeros(256, np.float32)),
                     lambda c, out: {}, check=check, constexprs={"BLOCK": 256})


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)
