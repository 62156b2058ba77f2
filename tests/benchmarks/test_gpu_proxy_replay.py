"""The GPU proxy's corpus replay (benchmarks/gpu_proxy/replay.py) without a GPU: the CUDA driver calls are
replaced by a NumPy model of device memory, so what is checked here is the replay's own logic: integers that
hold recorded host addresses are moved into the device copies (and back in the outputs), a kernel that kills
its process is that kernel's failure while a fresh worker replays the rest, atomic kernels are accepted only
when the order-free facts about their results hold, and float -> int conversions of NaN / out-of-range values
are counted apart."""

from __future__ import annotations

import json
import sys
import textwrap
import warnings

import numpy as np
import pytest

import enceladus
from codegen import address_kernels as ak
from codegen.gpu_proxy_loader import gpu_proxy
from paths import needs_cpu, on_path

replay = gpu_proxy("replay")
cuda = gpu_proxy("cuda")


DEVICE_BASE = 0x7F00_0000_0000_0000 >> 8  # above every user-space host address


class FakeDevice:
    """Device memory as bytearrays at made-up addresses far from any host address."""

    def __init__(self):
        self.next, self.mem, self.launches = DEVICE_BASE, {}, []

    def alloc(self, n):
        ptr, self.next = self.next, self.next + n + 4096
        self.mem[ptr] = bytearray(n)
        return ptr

    def find(self, addr):
        for base, buf in self.mem.items():
            if base <= addr < base + len(buf):
                return buf, addr - base
        raise cuda.CudaError("cuCtxSynchronize failed: error 700 (an illegal memory access was encountered)")

    def read(self, addr, dtype, count):
        """``count`` elements at ``addr``, all in one allocation (else an illegal access)."""
        buf, off = self.find(addr)
        n = np.dtype(dtype).itemsize * count
        if off + n > len(buf):
            self.find(addr + len(buf))  # past the allocation's end
        return np.frombuffer(bytes(buf[off:off + n]), dtype)

    def write(self, addr, values):
        blob = np.asarray(values).tobytes()
        buf, off = self.find(addr)
        if off + len(blob) > len(buf):
            self.find(addr + len(buf))
        buf[off:off + len(blob)] = blob

    def install(self, monkeypatch, kernel):
        monkeypatch.setattr(replay.cuda, "alloc", self.alloc)
        monkeypatch.setattr(replay.cuda, "free", lambda ptr: self.mem.pop(ptr))
        monkeypatch.setattr(replay.cuda, "upload", lambda ptr, b: self.mem[ptr].__setitem__(slice(0, len(b)), b))
        monkeypatch.setattr(replay.cuda, "download", lambda ptr, n: bytes(self.mem[ptr][:n]))
        monkeypatch.setattr(replay.cuda, "synchronize", lambda: None)

        def launch(fn, grid, block, values):
            self.launches.append(values)
            kernel(self, values)
        monkeypatch.setattr(replay.cuda, "launch", launch)


class FakeModule:
    def function(self, symbol):
        return symbol


class Param:
    def __init__(self, name, slot, kind="pointer"):
        self.name, self.slot, self.kind = name, slot, kind


def _address_case():
    """address_tile_kernel's shape: an int64 tile of addresses into an int32 array (one null), gathered to out."""
    host_x, host_addr, host_out = 0x5555_0000_1000, 0x5555_0000_9000, 0x5555_0001_0000
    x = np.arange(10, 18, dtype=np.int32)
    addrs = np.array([host_x + 4 * i for i in (7, 0, 3, 3)] + [0], np.int64)
    out = np.full(5, -9, np.int32)
    want = np.array([17, 10, 13, 13, -1], np.int32)
    meta = {"kernel": "address_tile_kernel", "name": "address_tile_kernel", "grid": [1, 1, 1], "threads": 32,
            "buffers": [{"name": "addr_ptr", "slot": 0, "region": 1, "offset": 0, "dtype": "<i8", "writes": False},
                        {"name": "out_ptr", "slot": 1, "region": 2, "offset": 0, "dtype": "<i4", "writes": True},
                        {"name": "x_ptr", "slot": 2, "region": 0, "offset": 0, "dtype": "<i4", "writes": False}],
            "regions": [x.nbytes, addrs.nbytes, out.nbytes], "args_slot": None, "args": None,
            "host_regions": [host_x, host_addr, host_out]}
    data = {"in0": x.view(np.uint8), "in1": addrs.view(np.uint8), "in2": out.view(np.uint8),
            "out0": x.view(np.uint8), "out1": addrs.view(np.uint8), "out2": want.view(np.uint8)}
    return meta, data


def _gather(dev, values):
    addr_base, out_base = (int.from_bytes(v, "little") for v in values[:2])
    abuf, aoff = dev.find(addr_base)
    obuf, ooff = dev.find(out_base)
    for i, a in enumerate(np.frombuffer(bytes(abuf[aoff:aoff + 40]), np.int64)):
        if a == 0:
            v = -1
        else:
            buf, off = dev.find(int(a))  # a host address here is an illegal access, as on the GPU
            v = int(np.frombuffer(bytes(buf[off:off + 4]), np.int32)[0])
        obuf[ooff + 4 * i:ooff + 4 * i + 4] = np.int32(v).tobytes()


PARAMS = (Param("addr_ptr", 0), Param("out_ptr", 1), Param("x_ptr", 2))


def test_recorded_host_addresses_are_moved_into_the_device_copies(monkeypatch):
    dev = FakeDevice()
    dev.install(monkeypatch, _gather)
    meta, data = _address_case()
    got = replay.replay_one(meta, data, FakeModule(), "k", PARAMS)
    assert np.array_equal(np.frombuffer(got[2], np.int32), [17, 10, 13, 13, -1])
    assert replay.judge(meta, data, got, "kernel void address_tile_kernel()")["status"] == "ok"
    # the kernel read device addresses: the recorded host ones are nowhere in the device copy
    launched_with = int.from_bytes(dev.launches[0][0], "little")
    assert launched_with not in meta["host_regions"]


def test_without_the_recorded_spans_the_addresses_are_not_moved(monkeypatch):
    dev = FakeDevice()
    dev.install(monkeypatch, _gather)
    meta, data = _address_case()
    del meta["host_regions"]  # a corpus recorded before the spans were: the launch faults, as on the H200
    with pytest.raises(cuda.CudaError, match="illegal"):
        replay.replay_one(meta, data, FakeModule(), "k", PARAMS)


def test_addresses_in_written_buffers_and_scalars_move_both_ways():
    meta = {"buffers": [{"name": "p", "slot": 0, "region": 0, "offset": 8, "dtype": "<u8", "writes": True}],
            "regions": [32], "host_regions": [0x1000]}
    words = np.array([7, 0x1000, 0x1008 + 24, 0x2000], np.uint64)  # one-past-the-end counts, 0x2000 does not
    args = np.array([0x1010, 5], np.uint64).tobytes()
    inputs, moved_args, moved = replay.host_to_device(meta, [words.tobytes()], args, [0xA000])
    assert np.frombuffer(inputs[0], np.uint64).tolist() == [7, 0xA000, 0xA020, 0x2000]
    assert np.frombuffer(moved_args, np.uint64).tolist() == [0xA010, 5]
    assert moved == 3
    back = replay.device_to_host(meta, inputs, [0xA000])
    assert back[0] == words.tobytes()


def test_regions_are_padded_to_whole_words(monkeypatch):
    """A 16-bit atomic on the last element of a 3-element float16 buffer reads its whole 32-bit word."""
    dev = FakeDevice()
    sizes = []
    dev.install(monkeypatch, lambda d, v: sizes.extend(len(b) for b in d.mem.values()))
    meta = {"kernel": "k", "name": "k", "grid": [1, 1, 1], "threads": 32, "args_slot": None, "args": None,
            "buffers": [{"name": "m", "slot": 0, "region": 0, "offset": 0, "dtype": "<f2", "writes": True}],
            "regions": [6]}
    got = replay.replay_one(meta, {"in0": np.arange(6, dtype=np.uint8)}, FakeModule(), "k", (Param("m", 0),))
    assert sizes == [16] and got == [bytes(range(6))]


# --- memory a kernel reaches only through integer addresses (the two kernels the H200 replay could not run) ---

record = gpu_proxy("record")


def _recorded(tmp_path, monkeypatch, launch):
    """{kernel name: (meta, data)} of the launches ``launch()`` makes on the cpu backend, recorded as record.py
    records the corpus."""
    from enceladus.runtime import launch as launch_mod

    monkeypatch.setattr(launch_mod.KernelLauncher, "submit", launch_mod.KernelLauncher.submit)  # restored after
    record.Recorder(str(tmp_path), 4 << 20).install()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # memory Enceladus does not know: warned about, unchecked
        launch()
    out = {}
    for f in tmp_path.glob("*.json"):
        meta = json.loads(f.read_text())
        out[meta["name"]] = (meta, dict(np.load(f.with_suffix(".npz"))))
    return out


def _params(meta):
    params = [Param(b["name"], b["slot"]) for b in meta["buffers"]]
    if meta["args_slot"] is not None:
        params.append(Param("args", meta["args_slot"], "bytes"))
    return sorted(params, key=lambda p: p.slot)


def _tile_on_device(n):
    """address_tile_kernel on the fake device: out[i] = *(int32*)addr[i], or -1 where addr[i] is null."""
    def run(dev, values):
        addr, out = (int.from_bytes(v, "little") for v in values[:2])
        for i, a in enumerate(dev.read(addr, np.int64, n)):
            dev.write(out + 4 * i, np.int32(-1 if a == 0 else dev.read(int(a), np.int32, 1)[0]))
    return run


def _gather_on_device(programs, n):
    """address_gather_kernel on the fake device: out[pid * n + j] = 2 * ((float*)addr[pid])[j]."""
    def run(dev, values):
        addr, out = (int.from_bytes(v, "little") for v in values[:2])
        for pid, a in enumerate(dev.read(addr, np.int64, programs)):
            dev.write(out + 4 * n * pid, dev.read(int(a), np.float32, n) * np.float32(2))
    return run


def _tile_launch():
    vals = np.arange(8, dtype=np.int32) * 3  # not an argument of the launch: reached only through the addresses
    addrs = np.array([vals.ctypes.data + 4 * i if i % 3 else 0 for i in range(8)], np.int64)
    on_path(ak.address_tile_kernel, "cpu")[(1,)](addrs, np.zeros(8, np.int32), N=8)


# Not test_addresses.py's N=16: another specialization, so that this launch does not take the once-per-line
# "memory Enceladus does not know" warning that test expects from its own first launch in the same process.
GATHER_N = 8


def _gather_launch(kind):
    def launch():
        if kind == "numpy":  # memory Enceladus does not know
            blocks = [np.arange(GATHER_N, dtype=np.float32) + 100 * i for i in range(3)]
            table, out = np.array([b.ctypes.data for b in blocks], np.int64), np.zeros(3 * GATHER_N, np.float32)
        else:  # live enceladus.Tensor allocations (checked by the cpu backend), the table an address tile too
            blocks = [enceladus.tensor(np.arange(GATHER_N, dtype=np.float32) + 100 * i) for i in range(3)]
            table = enceladus.tensor(np.array([b.device_address() for b in blocks], np.int64))
            out = enceladus.zeros(3 * GATHER_N)
        on_path(ak.address_gather_kernel, "cpu")[(3,)](table, out, N=GATHER_N)
        enceladus.synchronize()
    return launch


@needs_cpu
def test_memory_reached_only_through_addresses_is_recorded_and_replayed(tmp_path, monkeypatch):
    """address_tile_kernel: a tile of addresses (one null per three lanes) into a NumPy array that is no argument.
    Before issue #23's fix the recorder saved no copy of that array and the replay handed the device the host
    addresses: an illegal access, as on the H200."""
    meta, data = _recorded(tmp_path, monkeypatch, _tile_launch)["address_tile_kernel"]
    dev = FakeDevice()
    dev.install(monkeypatch, _tile_on_device(8))
    got = replay.replay_one(meta, data, FakeModule(), "k", _params(meta))
    want = np.where(np.arange(8) % 3 != 0, np.arange(8) * 3, -1).astype(np.int32)
    out = next(b for b in meta["buffers"] if b["name"] == "out_ptr")
    assert np.frombuffer(got[out["region"]], np.int32)[out["offset"] // 4:][:8].tolist() == want.tolist()
    assert replay.judge(meta, data, got, "kernel void address_tile_kernel()")["status"] == "ok"
    assert [(m["dtype"], m["nbytes"], m["origin"]) for m in meta.get("memory", [])] == [("<i4", 32, "numpy")]
    # the device read addresses of its own copy (the table is not written, so not moved back)
    table = next(b for b in meta["buffers"] if b["name"] == "addr_ptr")
    words = np.frombuffer(got[table["region"]], np.uint64)[table["offset"] // 8:][:8]
    assert all(w >= DEVICE_BASE for w in words[np.arange(8) % 3 != 0]) and not words[::3].any()


@needs_cpu
@pytest.mark.parametrize("kind", ["numpy", "tensor"])
def test_memory_of_each_program_is_recorded_and_compared(kind, tmp_path, monkeypatch):
    """address_gather_kernel: each program reads the GATHER_N floats its address names (three arrays, no argument)."""
    meta, data = _recorded(tmp_path, monkeypatch, _gather_launch(kind))["address_gather_kernel"]
    dev = FakeDevice()
    dev.install(monkeypatch, _gather_on_device(3, GATHER_N))
    got = replay.replay_one(meta, data, FakeModule(), "k", _params(meta))
    assert replay.judge(meta, data, got, "kernel void address_gather_kernel()")["status"] == "ok"
    origin = "numpy" if kind == "numpy" else "enceladus.Tensor"
    assert sorted((m["dtype"], m["origin"]) for m in meta["memory"]) == [("<f4", origin)] * 3
    out = next(b for b in meta["buffers"] if b["name"] == "out_ptr")
    want = np.concatenate([np.arange(GATHER_N) + 100 * i for i in range(3)]).astype(np.float32) * 2
    assert np.frombuffer(got[out["region"]], np.float32)[out["offset"] // 4:][:3 * GATHER_N].tolist() == want.tolist()
    # that memory is compared too: a device that changed it is a mismatch naming it
    m = meta["memory"][1]
    bad = bytearray(got[m["region"]])
    bad[m["offset"] + 4 * 5:m["offset"] + 4 * 6] = np.float32(-7).tobytes()
    got[m["region"]] = bytes(bad)
    r = replay.judge(meta, data, got, "kernel void address_gather_kernel()")
    assert r["status"] == "mismatch" and f"{origin} memory" in r["problems"][0], r


def test_addresses_stored_in_reached_memory_are_followed_and_moved():
    """A table of addresses that is itself reached through an address: found transitively by the recorder,
    and its words moved to the device copies (and back) by the replay."""
    data = np.arange(4, dtype=np.float32)
    inner = np.array([data.ctypes.data + 8, 0, 12345], np.int64)  # an address, a null, a plain integer
    outer = np.array([inner.ctypes.data], np.int64)  # the launch's argument
    span = (outer.ctypes.data, outer.ctypes.data + 8)
    found = record.reachable_memory([outer], [span], None)
    assert [(s.lo, s.hi, s.dtype) for s in found] == [(inner.ctypes.data, inner.ctypes.data + 24, "<i8"),
                                                      (data.ctypes.data, data.ctypes.data + 16, "<f4")]
    meta = {"buffers": [{"name": "outer", "slot": 0, "region": 0, "offset": 0, "dtype": "<i8", "writes": False}],
            "memory": [{"region": 1, "offset": 0, "nbytes": 24, "dtype": "<i8", "origin": "numpy"},
                       {"region": 2, "offset": 0, "nbytes": 16, "dtype": "<f4", "origin": "numpy"}],
            "regions": [8, 24, 16], "host_regions": [span[0], inner.ctypes.data, data.ctypes.data]}
    device = [0xA000, 0xB000, 0xC000]
    moved, _, n = replay.host_to_device(meta, [outer.tobytes(), inner.tobytes(), data.tobytes()], None, device)
    assert np.frombuffer(moved[0], np.int64).tolist() == [0xB000]
    assert np.frombuffer(moved[1], np.int64).tolist() == [0xC008, 0, 12345] and n == 2
    assert replay.device_to_host(meta, moved, device)[1] == inner.tobytes()  # reached memory: always moved back


def test_an_address_at_the_end_of_one_region_and_the_start_of_the_next_belongs_to_the_next():
    words = np.array([0x1010, 0x1008, 0x1020], np.uint64)  # regions [0x1000, 0x1010) and [0x1010, 0x1020)
    moved, n = replay._move_addresses(words, [0x1000, 0x1010], [0xA000, 0xB000], [16, 16])
    assert moved.tolist() == [0xB000, 0xA008, 0xB010] and n == 3


def _contention(op, dtype, vals, init, nslot, order):
    """A (memory, values, olds) launch whose atomics landed in ``order`` (lane indices)."""
    vals = np.asarray(vals, dtype)
    mem = np.full(nslot, init, dtype)
    olds = np.zeros_like(vals)
    for i in order:
        s = i % nslot
        olds[i] = mem[s]
        mem[s] = {"add": lambda a, b: a + b, "max": max, "min": min, "xchg": lambda a, b: b,
                  "or": lambda a, b: a | b}[op](mem[s], vals[i])
    return mem, olds


def _atomic_launch(op, dtype, vals, init, nslot, gpu_order, cpu_order):
    mem0 = np.full(nslot, init, dtype)
    vals = np.asarray(vals, dtype)
    cpu_mem, cpu_old = _contention(op, dtype, vals, init, nslot, cpu_order)
    gpu_mem, gpu_old = _contention(op, dtype, vals, init, nslot, gpu_order)
    meta = {"name": "atomic_kernel", "buffers": [
        {"name": "ptr", "slot": 0, "region": 0, "offset": 0, "dtype": np.dtype(dtype).str, "writes": True},
        {"name": "val_ptr", "slot": 1, "region": 1, "offset": 0, "dtype": np.dtype(dtype).str, "writes": False},
        {"name": "old_ptr", "slot": 2, "region": 2, "offset": 0, "dtype": np.dtype(dtype).str, "writes": True}]}
    u8 = lambda a: np.ascontiguousarray(a).view(np.uint8)  # noqa: E731
    data = {"in0": u8(mem0), "in1": u8(vals), "in2": u8(np.zeros_like(vals)),
            "out0": u8(cpu_mem), "out1": u8(vals), "out2": u8(cpu_old)}
    return meta, data, [gpu_mem.tobytes(), vals.tobytes(), gpu_old.tobytes()]


MSL = {"add": "kernel void k() { atomic_fetch_add_explicit((device atomic_int*)(p), v, memory_order_relaxed); }",
       "max": "kernel void k() { x = enc_atomic_fminmax((ptr + v19[e]), v16[e], true); }",
       "min": "kernel void k() { x = enc_atomic16<2>((mem_ptr + v19[e]), half(v16[e]), half(v16[e])); }",
       "xchg": "kernel void k() { atomic_exchange_explicit((device atomic_uint*)(p), v, memory_order_relaxed); }",
       "or": "kernel void k() { atomic_fetch_or_explicit((device atomic_uint*)(p), v, memory_order_relaxed); }"}
CASES = {"add": (np.int32, 0), "max": (np.float32, -100), "min": (np.float16, 100), "xchg": (np.uint32, 0),
         "or": (np.uint32, 0)}


@pytest.mark.parametrize("op", sorted(MSL))
def test_atomics_in_another_order_are_accepted_by_the_order_free_facts(op):
    dtype, init = CASES[op]
    rng = np.random.default_rng(5)
    vals = rng.integers(1, 60, 40) if op != "or" else 1 << rng.integers(0, 20, 40)
    order = rng.permutation(40)
    meta, data, got = _atomic_launch(op, dtype, vals, init, 4, order, np.arange(40))
    r = replay.judge(meta, data, got, MSL[op])
    assert r["status"] == "atomic-order" and r["problems"], r


@pytest.mark.parametrize("op", sorted(MSL))
def test_a_wrong_answer_is_not_hidden_as_atomic_order(op):
    dtype, init = CASES[op]
    vals = np.arange(1, 41) if op != "or" else 1 << (np.arange(40) % 20)
    meta, data, got = _atomic_launch(op, dtype, vals, init, 4, np.arange(40)[::-1], np.arange(40))
    olds = np.frombuffer(got[2], dtype).copy()
    olds[5] = olds[9]  # one lane saw a value it could not have (a lost or doubled update)
    if op in ("max", "min"):  # repeated old values are possible there: a value never offered is not
        olds[5] = 55
    if op == "or":
        olds[5] = np.uint32(1 << 25)
    got[2] = olds.tobytes()
    r = replay.judge(meta, data, got, MSL[op])
    assert r["status"] == "mismatch", r
    assert "atomic " + op in r["problems"][-1]


def test_atomics_with_no_order_free_rule_are_failures():
    meta, data, got = _atomic_launch("add", np.int32, np.arange(1, 41), 0, 4, np.arange(40)[::-1], np.arange(40))
    body = "kernel void k() { atomic_fetch_add_explicit(a, 1, r); atomic_fetch_max_explicit(b, 1, r); }"
    r = replay.judge(meta, data, got, body)
    assert r["status"] == "atomic-unverified" and "exactly one" in r["problems"][-1]


def test_tickets_from_a_scalar_counter():
    counter0, counter1 = np.array([3], np.int32), np.array([67], np.int32)
    tickets = np.random.default_rng(1).permutation(64).astype(np.int32) + 3
    meta = {"name": "ordered_ticket_kernel", "buffers": [
        {"name": "counter_ptr", "slot": 0, "region": 0, "offset": 0, "dtype": "<i4", "writes": True},
        {"name": "out_ptr", "slot": 1, "region": 1, "offset": 0, "dtype": "<i4", "writes": True}]}
    data = {"in0": counter0.view(np.uint8), "in1": np.zeros(64, np.int32).view(np.uint8),
            "out0": counter1.view(np.uint8), "out1": (np.arange(64, dtype=np.int32) + 3).view(np.uint8)}
    r = replay.judge(meta, data, [counter1.tobytes(), tickets.tobytes()], MSL["add"])
    assert r["status"] == "atomic-order"
    tickets[0] = tickets[1]  # two programs with one ticket
    r = replay.judge(meta, data, [counter1.tobytes(), tickets.tobytes()], MSL["add"])
    assert r["status"] == "mismatch"


CONVERT = "kernel void convert() { for (int e = 0; e < 2; ++e) v8[e] = static_cast<int>(v7[e]); }"


@pytest.mark.parametrize("dtype,cpu,gpu", [(np.int32, -2**31, 0), (np.int32, -2**31, 2**31 - 1),
                                           (np.int64, -2**63, 0), (np.int8, 0, 127), (np.int8, 44, 127),
                                           (np.int16, 0, -2**15)])
def test_undefined_float_to_int_conversions_are_counted_apart(dtype, cpu, gpu):
    want = np.arange(8, dtype=dtype)
    want[3] = cpu
    g = want.copy()
    g[3] = gpu
    meta = {"name": "convert", "buffers": [
        {"name": "out_ptr", "slot": 0, "region": 0, "offset": 0, "dtype": np.dtype(dtype).str, "writes": True}]}
    data = {"in0": np.zeros(want.nbytes, np.uint8), "out0": want.view(np.uint8)}
    r = replay.judge(meta, data, [g.tobytes()], CONVERT)
    assert r["status"] == "undefined-conversion" and r["undefined_elements"] == 1, r
    # without a float -> int conversion in the kernel the same difference is a mismatch
    assert replay.judge(meta, data, [g.tobytes()], "kernel void k() {}")["status"] == "mismatch"
    # and any other difference in a converting kernel is one too
    g[5] = 99
    r = replay.judge(meta, data, [g.tobytes()], CONVERT)
    assert r["status"] == "mismatch" and r["undefined_elements"] == 1


def test_a_worker_that_dies_fails_only_its_kernel(tmp_path):
    """The parent names the kernel a worker died in, keeps what it printed, and replays the rest in a new one."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    digests = [f"{i:016x}" for i in range(5)]
    for i, d in enumerate(digests):
        (corpus / f"{d}.json").write_text(json.dumps({"name": f"kernel{i}"}))
    fake = tmp_path / "fake_worker.py"
    fake.write_text(textwrap.dedent(f"""
        import json, os, sys
        MARK = {replay._MARK!r}
        print(MARK + "ready", flush=True)
        for d in open(sys.argv[sys.argv.index("--worker") + 1]).read().split():
            print(MARK + "start " + d, flush=True)
            if d.endswith("2"):  # an illegal address: the sanitizer reports, the process dies
                print("========= Invalid __global__ read of size 4 bytes", flush=True)
                os._exit(1)
            if d.endswith("4") and "hang" in sys.argv[0]:
                import time
                time.sleep(60)
            if d.endswith("3"):
                print(MARK + "result " + json.dumps({{"kernel": "kernel3", "status": "launch-failed",
                                                       "error": "error 719"}}), flush=True)
                sys.exit(3)
            print(MARK + "result " + json.dumps({{"kernel": "k", "status": "ok", "problems": []}}), flush=True)
        print(MARK + "done", flush=True)
    """))
    results = {}
    started = replay.run_isolated(str(corpus), str(tmp_path), digests, results, [sys.executable, str(fake)])
    assert started == 3
    assert [results[d]["status"] for d in digests] == ["ok", "ok", "fault", "launch-failed", "ok"]
    assert results[digests[2]]["kernel"] == "kernel2"
    assert results[digests[2]]["report"] == ["========= Invalid __global__ read of size 4 bytes"]
    # a kernel that hangs is killed after the timeout and is that kernel's fault
    hang = tmp_path / "hang_worker.py"
    hang.write_text(fake.read_text())
    results = {}
    started = replay.run_isolated(str(corpus), str(tmp_path), digests, results, [sys.executable, str(hang)],
                                  kernel_timeout=2)
    assert [results[d]["status"] for d in digests] == ["ok", "ok", "fault", "launch-failed", "fault"]
    assert "hung" in results[digests[4]]["error"]


def test_a_worker_that_cannot_start_fails_the_rest_once(tmp_path):
    """No CUDA driver (or no import): one worker, every kernel failed with its message, not one worker each."""
    fake = tmp_path / "fake_worker.py"
    fake.write_text("import sys\nprint('ImportError: no module named numpy')\nsys.exit(1)\n")
    results = {}
    assert replay.run_isolated(str(tmp_path), str(tmp_path), ["a", "b"], results, [sys.executable, str(fake)]) == 1
    assert {r["status"] for r in results.values()} == {"launch-failed"}
    assert results["a"]["report"] == ["ImportError: no module named numpy"]


def test_the_worker_stops_at_the_first_cuda_error(monkeypatch):
    """A fault leaves the CUDA context unusable: the worker reports the kernel and exits for a fresh one."""
    import io
    import types

    kernel = types.SimpleNamespace(symbol="enc_proxy_k", params=())
    monkeypatch.setattr(replay, "_load", lambda corpus, d: ({"kernel": "k", "name": f"name-{d}"}, {}, "msl"))
    monkeypatch.setattr(replay, "translate", lambda msl: types.SimpleNamespace(source="src", kernels={"k": kernel}))
    monkeypatch.setattr(replay.cuda, "Module", lambda path: None)
    monkeypatch.setattr(replay.cuda, "lib", lambda: None)

    def run(meta, data, module, symbol, params):
        if meta["name"] == "name-b":
            raise cuda.CudaError("cuCtxSynchronize failed: error 700 (an illegal memory access was encountered)")
        return []
    monkeypatch.setattr(replay, "replay_one", run)
    monkeypatch.setattr(replay, "judge", lambda meta, data, got, msl: {"kernel": meta["name"], "status": "ok"})
    out = io.StringIO()
    assert replay.worker("corpus", "build", ["a", "b", "c"], out) == 3
    lines = out.getvalue().splitlines()
    assert [line.split()[1] for line in lines] == ["ready", "start", "result", "start", "result"]
    last = json.loads(lines[-1].split(" ", 2)[2])
    assert last["status"] == "launch-failed" and "illegal" in last["error"]
    out = io.StringIO()
    assert replay.worker("corpus", "build", ["a", "c"], out) == 0
    assert out.getvalue().splitlines()[-1] == replay._MARK + "done"


def test_float_running_sums_allow_rounding_but_not_a_lost_update():
    """float32 adds in another order round differently (accepted); a lost addition is not."""
    rng = np.random.default_rng(3)
    vals = rng.standard_normal(64).astype(np.float32) ** 2
    meta, data, got = _atomic_launch("add", np.float32, vals, 0, 1, rng.permutation(64), np.arange(64))
    assert replay.judge(meta, data, got, MSL["add"])["status"] in ("ok", "atomic-order")
    mem = np.frombuffer(got[0], np.float32) - vals.max()  # the largest value's addition lost
    got[0] = mem.astype(np.float32).tobytes()
    assert replay.judge(meta, data, got, MSL["add"])["status"] == "mismatch"
