"""A recording stand-in for libobjc + Metal: a check of OUR call sequence, not of Metal.

It implements the two methods of ``ObjCRuntime``. Every sender it hands out is a real ctypes
function pointer with the bridge's prototype, pointing at a ctypes callback with the same
prototype, so each message goes through ctypes' C marshalling exactly as with ``objc_msgSend``:
the callback sees the C-level values (an int too wide for its declared type arrives truncated).

For each message it checks: the selector is one Apple's metadata knows, the C types the bridge
passed match the metadata's encodings (argument widths), the receiver is a live object of the
right kind, +0 objects are only produced inside an autorelease pool, and encoder/command-buffer
state moves in the documented order. Buffers carry their resource options: a buffer whose storage is not Shared is refused where
the host code needs host-visible memory (``contents`` of a Private buffer is nil, as in Metal; Managed
needs synchronization messages the host code never sends; Memoryless buffers do not exist; no-copy
buffers must be Shared), and so is untracked hazard tracking (the host code sends no fences). It keeps
reference counts, so tests can assert that every
object we created was released. Dispatches are executed on the cpu backend when the command
buffer is waited for, with the bound buffers' addresses + offsets and the ``setBytes`` data, so
the metal host code's argument binding is checked end to end. None of this says anything about
how a real Apple GPU behaves.
"""

from __future__ import annotations

import ctypes
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from enceladus.backends.metal.objc import ENCODINGS, MTLSize, NSRange
from enceladus.compiler.msl_signature import parse_kernels

DATA = Path(__file__).parent / "data" / "metal_selectors.json"
# MTLResourceOptions (MTLResource.h): CPU cache mode in bits 0-3, storage mode in bits 4-7, hazard tracking
# mode in bits 8-9
CPU_CACHE_MODES = {0: "DefaultCache", 1: "WriteCombined"}
STORAGE_MODES = {0: "Shared", 1: "Managed", 2: "Private", 3: "Memoryless"}
HAZARD_MODES = {0: "Default", 1: "Untracked", 2: "Tracked"}
PROTOCOL_KINDS = {"MTLDevice", "MTLCommandQueue", "MTLCommandBuffer", "MTLComputeCommandEncoder", "MTLLibrary",
                  "MTLFunction", "MTLComputePipelineState", "MTLBuffer"}


def load_metadata() -> dict[str, Any]:
    """The extracted metadata (tests/backends/metal/data/metal_selectors.json)."""
    return json.loads(DATA.read_text())


def expected_encodings(meta: dict[str, Any], receiver: str, selector: str) -> tuple[str, tuple[str, ...]] | None:
    """(retval, args) encodings for ``selector`` sent to ``receiver`` according to the metadata, or None."""
    nargs = selector.count(":")
    if receiver in PROTOCOL_KINDS:
        e = meta["selectors"].get(f"NSObject {selector}")
        if e is None or not e.get("protocol"):
            return None
        return e["retval"], tuple(e.get("args", {}).get(str(i + 2), "?") for i in range(nargs))
    hand = meta["hand_entered"].get(f"{receiver} {selector}") or meta["hand_entered"].get(f"NSObject {selector}")
    if hand is None:
        return None
    return hand["retval"], tuple(hand["args"])


# Calls after which the stand-in puts one object of its own in the innermost autorelease pool (see unpooled).
INTERNALLY_AUTORELEASING = {"newCommandQueue", "newBufferWithLength:options:",
                            "newBufferWithBytesNoCopy:length:options:deallocator:", "setBuffers:offsets:withRange:",
                            "dispatchThreadgroups:threadsPerThreadgroup:", "dispatchThreads:threadsPerThreadgroup:",
                            "endEncoding", "commit", "waitUntilCompleted", "status"}


class ProtocolViolation(AssertionError):
    """The bridge did something the stand-in's model of Objective-C/Metal forbids."""


@dataclass
class Obj:
    """A fake Objective-C object."""

    kind: str
    refs: int = 1
    data: dict[str, Any] = field(default_factory=dict)


class RecordingObjCRuntime:
    """Stand-in for libobjc/Metal/Foundation; see the module docstring for what it checks."""

    def __init__(self, *, max_threads: int = 1024, fail_status: bool = False, cpu_backend: Any = None,
                 families: tuple[int, ...] = (1007, 5002), execution_width: int = 32,
                 msl_versions: tuple[int, ...] = (0x30002,), device_name: str = "Recording stand-in (not a GPU)",
                 compile_check: bool = False) -> None:
        self.device_name = device_name
        self.compile_check = compile_check  # newLibraryWithSource compiles on the cpu backend (its errors refuse)
        self.families = families  # the GPU families the pretend device supports (M1-class + Metal 4 by default)
        self.execution_width = execution_width  # threadExecutionWidth of every pipeline
        self.meta = load_metadata()
        self.calls: list[tuple[str, str, tuple[Any, ...]]] = []  # (receiver kind, selector, C-level args)
        self.violations: list[str] = []
        self.objects: dict[int, Obj] = {}
        self.max_threads = max_threads
        self.fail_status = fail_status
        self.cpu = cpu_backend
        self._ids = itertools.count(0x1000, 0x10)
        self._sels: dict[int, str] = {}
        self._sel_ids: dict[str, int] = {}
        self._classes: dict[str, int] = {}
        self._pools: list[list[int]] = []
        self._keep: list[Any] = []  # callbacks, C strings and buffers that must outlive the calls
        self.senders_built: list[tuple[Any, tuple[Any, ...]]] = []
        self.executed: list[str] = []
        self.bound_history: list[dict[int, tuple[int, int]]] = []  # encoder bindings after each setBuffers
        self.resident_history: list[dict[int, int]] = []  # per dispatch: useResources: handles -> usage
        # Metal may autorelease objects internally in any call; modelled by the calls below creating one +0 object
        # each. With no pool pushed (a Python thread has none) it would leak for the life of the process: listed here.
        self.unpooled: list[str] = []
        self.msl_versions = msl_versions  # MTLLanguageVersion values this pretend OS compiles

    # -- ObjCRuntime -----------------------------------------------------------------------------
    def msg_sender(self, restype: Any, argtypes: tuple[Any, ...]) -> Any:
        proto = ctypes.CFUNCTYPE(restype, ctypes.c_void_p, ctypes.c_void_p, *argtypes)
        self.senders_built.append((restype, argtypes))

        def impl(receiver: int | None, sel: int | None, *args: Any) -> Any:
            try:
                return self._message(restype, argtypes, receiver or 0, sel or 0, args)
            except Exception as e:  # exceptions cannot cross the C callback: record them
                self.violations.append(f"{type(e).__name__}: {e}")
                return None if restype is None else 0

        cb = proto(impl)
        self._keep.append(cb)
        return proto(ctypes.cast(cb, ctypes.c_void_p).value)

    def c_function(self, library: str, name: str, restype: Any, argtypes: tuple[Any, ...]) -> Any:
        proto = ctypes.CFUNCTYPE(restype, *argtypes)
        impl = getattr(self, f"_c_{name}")

        def wrapped(*args: Any) -> Any:
            try:
                return impl(*args)
            except Exception as e:
                self.violations.append(f"{name}: {type(e).__name__}: {e}")
                return None if restype is None else 0

        cb = proto(wrapped)
        self._keep.append(cb)
        return proto(ctypes.cast(cb, ctypes.c_void_p).value)

    # -- C functions -----------------------------------------------------------------------------
    def _c_objc_getClass(self, name: bytes) -> int:
        n = name.decode()
        if n not in self._classes:
            cid = next(self._ids)
            self.objects[cid] = Obj("class:" + n, refs=1 << 30)
            self._classes[n] = cid
        return self._classes[n]

    def _c_sel_registerName(self, name: bytes) -> int:
        n = name.decode()
        if n not in self._sel_ids:
            sid = next(self._ids)
            self._sel_ids[n], self._sels[sid] = sid, n
        return self._sel_ids[n]

    def _c_objc_autoreleasePoolPush(self) -> int:
        self._pools.append([])
        return len(self._pools)

    def _c_objc_autoreleasePoolPop(self, token: int) -> None:
        if token != len(self._pools):
            raise ProtocolViolation(f"autorelease pools popped out of order ({token} vs {len(self._pools)})")
        for oid in self._pools.pop():
            self._release(oid)

    def _c_MTLCreateSystemDefaultDevice(self) -> int:
        return self._new("MTLDevice")

    # -- object model ----------------------------------------------------------------------------
    def _new(self, kind: str, autoreleased: bool = False, **data: Any) -> int:
        oid = next(self._ids)
        self.objects[oid] = Obj(kind, 1, dict(data))
        if autoreleased:
            if not self._pools:
                raise ProtocolViolation(f"a +0 {kind} was returned outside any autorelease pool (it would leak)")
            self._pools[-1].append(oid)
        return oid

    def _internal_autorelease(self, what: str) -> None:
        if self._pools:
            self._new("internal", autoreleased=True, by=what)
        else:
            self.unpooled.append(what)

    def _release(self, oid: int) -> None:
        obj = self.objects[oid]
        if obj.refs <= 0:
            raise ProtocolViolation(f"over-release of a {obj.kind}")
        obj.refs -= 1

    def live(self, kind: str | None = None) -> list[Obj]:
        """Objects not yet released (classes excluded), optionally of one kind."""
        return [o for o in self.objects.values() if o.refs > 0 and not o.kind.startswith("class:")
                and (kind is None or o.kind == kind)]

    def selectors_sent(self) -> list[str]:
        """The selectors in the order they were sent."""
        return [c[1] for c in self.calls]

    def _string(self, text: str) -> int:
        return self._new("NSString", autoreleased=True, text=text)

    # -- messages --------------------------------------------------------------------------------
    def _message(self, restype: Any, argtypes: tuple[Any, ...], receiver: int, sel: int, args: tuple[Any, ...]) -> Any:
        name = self._sels.get(sel)
        if name is None:
            raise ProtocolViolation(f"unregistered SEL {sel:#x}")
        obj = self.objects.get(receiver)
        if obj is None:
            raise ProtocolViolation(f"{name} sent to unknown object {receiver:#x}")
        if obj.refs <= 0:
            raise ProtocolViolation(f"{name} sent to a released {obj.kind}")
        kind = obj.kind.removeprefix("class:")
        lookup = "NSObject" if name in ("alloc", "init", "retain", "release") else kind
        expected = expected_encodings(self.meta, lookup, name)
        if expected is None:
            raise ProtocolViolation(f"{kind} does not respond to {name} according to the metadata")
        want = (ENCODINGS[expected[0]], tuple(ENCODINGS[a] for a in expected[1]))
        if (restype, argtypes) != want:
            raise ProtocolViolation(f"{name}: sent with C types {restype}, {argtypes}; metadata says {expected}")
        self.calls.append((kind, name, args))
        if name in INTERNALLY_AUTORELEASING:
            self._internal_autorelease(name)
        handler = getattr(self, "_m_" + name.replace(":", "_"), None)
        if handler is None:
            return None if restype is None else 0
        return handler(receiver, obj, *args)

    # NSObject / Foundation
    def _m_alloc(self, rid: int, obj: Obj) -> int:
        return self._new(obj.kind.removeprefix("class:"))

    def _m_init(self, rid: int, obj: Obj) -> int:
        return rid

    def _m_retain(self, rid: int, obj: Obj) -> int:
        obj.refs += 1
        return rid

    def _m_release(self, rid: int, obj: Obj) -> None:
        self._release(rid)

    def _m_initWithBytes_length_encoding_(self, rid: int, obj: Obj, ptr: int, n: int, enc: int) -> int:
        obj.data["text"] = ctypes.string_at(ptr, n).decode()
        return rid

    def _m_UTF8String(self, rid: int, obj: Obj) -> int:
        buf = ctypes.create_string_buffer(obj.data["text"].encode())
        self._keep.append(buf)
        return ctypes.addressof(buf)

    def _m_localizedDescription(self, rid: int, obj: Obj) -> int:
        return self._string(obj.data["text"])

    def _m_fileURLWithPath_(self, rid: int, obj: Obj, path: int) -> int:
        return self._new("NSURL", autoreleased=True, path=self.objects[path].data["text"])

    # MTLDevice
    def _m_name(self, rid: int, obj: Obj) -> int:
        return self._string(self.device_name)

    def _m_maxThreadgroupMemoryLength(self, rid: int, obj: Obj) -> int:
        return 32768

    def _m_hasUnifiedMemory(self, rid: int, obj: Obj) -> bool:
        return True

    def _m_supportsFamily_(self, rid: int, obj: Obj, family: int) -> bool:
        return family in self.families

    def _m_newCommandQueue(self, rid: int, obj: Obj) -> int:
        return self._new("MTLCommandQueue")

    def _m_newLibraryWithSource_options_error_(self, rid: int, obj: Obj, src: int, opts: int, err: Any) -> int:
        text = self.objects[src].data["text"]
        options = dict(self.objects[opts].data)
        version = options.get("languageVersion", 0)
        if version not in self.msl_versions or ("#include <metal_tensor>" in text and version < 0x40000):
            err[0] = self._new("NSError", autoreleased=True,
                               text=f"Unsupported language version {version:#x} (stand-in compiles "
                                    f"{', '.join(hex(v) for v in self.msl_versions)})")
            return 0
        if "#error" in text:
            err[0] = self._new("NSError", autoreleased=True, text="program_source:3:2: error: " + text.split("#error")[1]
                               .splitlines()[0].strip())
            return 0
        if self.compile_check and self.cpu is not None:
            try:
                self.cpu.compile(text)
            except Exception as exc:  # noqa: BLE001 - the cpu twin's refusal stands for Metal's compiler log
                err[0] = self._new("NSError", autoreleased=True, text=str(exc))
                return 0
        return self._new("MTLLibrary", source=text, options=options)

    def _m_setRequiredThreadsPerThreadgroup_(self, rid: int, obj: Obj, size: Any) -> None:
        obj.data["requiredThreadsPerThreadgroup"] = (size.width, size.height, size.depth)

    def _m_setLanguageVersion_(self, rid: int, obj: Obj, v: int) -> None:
        obj.data["languageVersion"] = v

    def _m_setMathMode_(self, rid: int, obj: Obj, v: int) -> None:
        obj.data["mathMode"] = v

    def _m_setMathFloatingPointFunctions_(self, rid: int, obj: Obj, v: int) -> None:
        obj.data["mathFloatingPointFunctions"] = v

    def _m_newFunctionWithName_(self, rid: int, obj: Obj, name: int) -> int:
        fname = self.objects[name].data["text"]
        if fname not in parse_kernels(obj.data["source"]):
            return 0
        return self._new("MTLFunction", name=fname, source=obj.data["source"])

    def _m_newComputePipelineStateWithFunction_error_(self, rid: int, obj: Obj, fn: int, err: Any) -> int:
        f = self.objects[fn].data
        return self._new("MTLComputePipelineState", **f)

    def _m_maxTotalThreadsPerThreadgroup(self, rid: int, obj: Obj) -> int:
        return self.max_threads

    def _m_threadExecutionWidth(self, rid: int, obj: Obj) -> int:
        return self.execution_width

    def _m_staticThreadgroupMemoryLength(self, rid: int, obj: Obj) -> int:
        return 0

    @staticmethod
    def resource_options(options: int) -> tuple[str, str, str]:
        """(CPU cache mode, storage mode, hazard tracking mode) of MTLResourceOptions; unknown bits refused."""
        cache, storage, hazard = options & 0xF, (options >> 4) & 0xF, (options >> 8) & 0x3
        if cache not in CPU_CACHE_MODES or storage not in STORAGE_MODES or hazard not in HAZARD_MODES \
                or options >> 10:
            raise ProtocolViolation(f"MTLResourceOptions {options:#x} has bits no MTLResourceOptions value defines")
        return CPU_CACHE_MODES[cache], STORAGE_MODES[storage], HAZARD_MODES[hazard]

    def _check_buffer_options(self, options: int, nocopy: bool) -> str:
        _, storage, hazard = self.resource_options(options)
        if storage == "Memoryless":
            raise ProtocolViolation("a Memoryless MTLBuffer: memoryless storage exists only for render-pass "
                                    "attachments (textures), never for buffers")
        if storage == "Managed":
            raise ProtocolViolation("a Managed MTLBuffer: its host writes need didModifyRange: and its host reads a "
                                    "blit synchronizeResource:, which the host code never sends; use Shared")
        if nocopy and storage != "Shared":
            raise ProtocolViolation(f"newBufferWithBytesNoCopy with {storage} storage: wrapping host memory "
                                    "needs Shared storage")
        if hazard == "Untracked":
            raise ProtocolViolation("an untracked MTLBuffer: Metal then leaves ordering between command buffers "
                                    "to fences/events, which the host code never encodes")
        return storage

    def _m_newBufferWithLength_options_(self, rid: int, obj: Obj, n: int, options: int) -> int:
        storage = self._check_buffer_options(options, nocopy=False)
        mem = (ctypes.c_uint8 * n)()  # for a Private buffer: memory only dispatches reach (contents is nil)
        return self._new("MTLBuffer", memory=mem, address=ctypes.addressof(mem), length=n, options=options,
                         storage=storage)

    def _m_newBufferWithBytesNoCopy_length_options_deallocator_(self, rid: int, obj: Obj, ptr: int, n: int,
                                                                options: int, dealloc: int | None) -> int:
        if ptr % 16384 or n % 16384:  # Apple silicon's 16 KiB pages
            raise ProtocolViolation(f"newBufferWithBytesNoCopy with unaligned range {ptr:#x}+{n}")
        storage = self._check_buffer_options(options, nocopy=True)
        return self._new("MTLBuffer", address=ptr, length=n, options=options, nocopy=True, storage=storage)

    def _m_contents(self, rid: int, obj: Obj) -> int:
        if obj.data.get("storage", "Shared") != "Shared":
            # Metal returns nil; the message is recorded as a violation and the caller gets nil (0)
            raise ProtocolViolation(f"contents of a {obj.data['storage']} MTLBuffer: its memory is not "
                                    "host-visible (Metal returns nil)")
        return obj.data["address"]

    def _m_length(self, rid: int, obj: Obj) -> int:
        return obj.data["length"]

    def _m_gpuAddress(self, rid: int, obj: Obj) -> int:
        # the stand-in's GPU address space is the host's: its dispatches run on the cpu backend, which dereferences
        # the integers a kernel turns into pointers (on a real GPU this is a separate virtual address)
        return obj.data["address"]

    # queue, command buffer, encoder
    def _m_commandBuffer(self, rid: int, obj: Obj) -> int:
        return self._new("MTLCommandBuffer", autoreleased=True, state="open", dispatches=[])

    def _m_computeCommandEncoder(self, rid: int, obj: Obj) -> int:
        if obj.data["state"] != "open" or obj.data.get("encoder_open"):
            raise ProtocolViolation("computeCommandEncoder on a command buffer that is not open for encoding")
        obj.data["encoder_open"] = True
        return self._new("MTLComputeCommandEncoder", autoreleased=True, cb=rid, ended=False, bound={}, bytes={})

    def _encoder(self, obj: Obj, what: str) -> None:
        if obj.data["ended"]:
            raise ProtocolViolation(f"{what} after endEncoding")

    def _m_setComputePipelineState_(self, rid: int, obj: Obj, pso: int) -> None:
        self._encoder(obj, "setComputePipelineState:")
        obj.data["pipeline"] = pso

    def _m_setBuffers_offsets_withRange_(self, rid: int, obj: Obj, handles: Any, offsets: Any, rng: NSRange) -> None:
        self._encoder(obj, "setBuffers:")
        for i in range(rng.length):
            obj.data["bound"][rng.location + i] = (handles[i], offsets[i])
        self.bound_history.append(dict(obj.data["bound"]))

    def _m_setBytes_length_atIndex_(self, rid: int, obj: Obj, ptr: int, n: int, index: int) -> None:
        self._encoder(obj, "setBytes:")
        obj.data["bytes"][index] = ctypes.string_at(ptr, n)  # Metal copies the bytes at this point

    def _m_useResources_count_usage_(self, rid: int, obj: Obj, handles: Any, n: int, usage: int) -> None:
        self._encoder(obj, "useResources:")
        if usage & ~3 or not usage:  # MTLResourceUsageRead = 1, MTLResourceUsageWrite = 2
            raise ProtocolViolation(f"useResources: with usage {usage}")
        for i in range(n):
            res = self.objects.get(handles[i] or 0)
            if res is None or res.kind != "MTLBuffer" or res.refs <= 0:
                raise ProtocolViolation(f"useResources: given {handles[i]}, which is not a live MTLBuffer")
            obj.data.setdefault("resident", {})[handles[i]] = usage

    def _m_setThreadgroupMemoryLength_atIndex_(self, rid: int, obj: Obj, n: int, index: int) -> None:
        obj.data.setdefault("tg", {})[index] = n

    def _m_dispatchThreadgroups_threadsPerThreadgroup_(self, rid: int, obj: Obj, groups: MTLSize,
                                                       threads: MTLSize, mode: str = "threadgroups") -> None:
        self._encoder(obj, f"dispatch{mode.capitalize()}:")
        if "pipeline" not in obj.data:
            raise ProtocolViolation("dispatch without a pipeline state")
        self.resident_history.append(dict(obj.data.get("resident", {})))  # buffers made resident for it
        cb = self.objects[obj.data["cb"]]
        cb.data["dispatches"].append((obj.data["pipeline"], dict(obj.data["bound"]), dict(obj.data["bytes"]),
                                      (groups.width, groups.height, groups.depth),
                                      (threads.width, threads.height, threads.depth), dict(obj.data.get("tg", {})),
                                      mode))

    def _m_dispatchThreads_threadsPerThreadgroup_(self, rid: int, obj: Obj, grid: MTLSize, threads: MTLSize) -> None:
        self._m_dispatchThreadgroups_threadsPerThreadgroup_(rid, obj, grid, threads, mode="threads")

    def _m_endEncoding(self, rid: int, obj: Obj) -> None:
        self._encoder(obj, "endEncoding")
        obj.data["ended"] = True
        self.objects[obj.data["cb"]].data["encoder_open"] = False

    def _m_commit(self, rid: int, obj: Obj) -> None:
        if obj.data["state"] != "open" or obj.data.get("encoder_open"):
            raise ProtocolViolation("commit with an encoder still open, or twice")
        obj.data["state"] = "committed"

    def _m_waitUntilCompleted(self, rid: int, obj: Obj) -> None:
        if obj.data["state"] != "committed":
            raise ProtocolViolation("waitUntilCompleted on a command buffer that was not committed")
        for d in obj.data["dispatches"]:
            self._execute(*d)
        obj.data["state"] = "completed"

    def _m_status(self, rid: int, obj: Obj) -> int:
        return {"open": 0, "committed": 2, "completed": 5 if self.fail_status else 4}[obj.data["state"]]

    def _m_error(self, rid: int, obj: Obj) -> int:
        if not self.fail_status:
            return 0
        return self._new("NSError", autoreleased=True, text="Execution of the command buffer was aborted due to an "
                                                            "error during execution. (stand-in)")

    def _m_GPUStartTime(self, rid: int, obj: Obj) -> float:
        return 100.0

    def _m_GPUEndTime(self, rid: int, obj: Obj) -> float:
        return 100.0 + 1e-6 * len(obj.data["dispatches"])

    # capture
    def _m_sharedCaptureManager(self, rid: int, obj: Obj) -> int:
        return self._new("MTLCaptureManager", autoreleased=True)

    def _m_supportsDestination_(self, rid: int, obj: Obj, dest: int) -> bool:
        return dest == 2

    def _m_startCaptureWithDescriptor_error_(self, rid: int, obj: Obj, desc: int, err: Any) -> bool:
        d = self.objects[desc].data
        self.capture = {"object": d.get("object"), "destination": d.get("destination"), "url": d.get("url")}
        return True

    def _m_setCaptureObject_(self, rid: int, obj: Obj, o: int) -> None:
        obj.data["object"] = self.objects[o].kind

    def _m_setDestination_(self, rid: int, obj: Obj, d: int) -> None:
        obj.data["destination"] = d

    def _m_setOutputURL_(self, rid: int, obj: Obj, url: int) -> None:
        obj.data["url"] = self.objects[url].data["path"]

    # -- running dispatches on the cpu backend ---------------------------------------------------
    def _execute(self, pso: int, bound: dict, data: dict, groups: tuple, threads: tuple, tg: dict,
                 mode: str) -> None:
        p = self.objects[pso].data
        self.executed.append(p["name"])
        if self.cpu is None:
            return
        addresses: dict[int, int] = {}
        for slot, (handle, offset) in bound.items():
            addresses[slot] = self.objects[handle].data["address"] + offset
        for slot, raw in data.items():
            buf = ctypes.create_string_buffer(raw, max(len(raw), 1))
            self._keep.append(buf)
            addresses[slot] = ctypes.addressof(buf)
        fn = self.cpu.compile(p["source"]).function(p["name"])
        run = fn.dispatch_threads if mode == "threads" else fn.launch  # groups is the grid in threads then
        run(groups, threads, addresses, threadgroup_memory=tg or None)
