"""A thin Objective-C bridge in ctypes: ``objc_msgSend`` with one bound sender per selector signature.

Every selector the metal backend sends is declared once in ``SELECTORS`` with its receiver and its
Objective-C type encodings (arm64). tests/backends/metal/test_selectors.py checks each declaration
against Apple's API metadata (extracted by tools/extract_metal_metadata.py), so a wrong argument
width cannot slip in: ctypes passes exactly the declared C types, never its defaults.

Ownership follows Cocoa's rules: ``new*``/``alloc``/``copy`` return +1 objects that we release;
other getters return +0 (autoreleased) objects that we retain if we keep them, inside an
autorelease pool that we push and pop ourselves (a Python process has no run loop to drain one).

Nothing here runs at import time: the C libraries are loaded when an ``ObjCBridge`` is built.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

NSUTF8StringEncoding = 4


class MTLSize(ctypes.Structure):
    """``MTLSize``: three NSUInteger (uint64 on arm64), passed by value."""

    _fields_ = [("width", ctypes.c_uint64), ("height", ctypes.c_uint64), ("depth", ctypes.c_uint64)]


class NSRange(ctypes.Structure):
    """``NSRange``: location and length, two NSUInteger, passed by value."""

    _fields_ = [("location", ctypes.c_uint64), ("length", ctypes.c_uint64)]


# Objective-C type encoding (arm64) -> the ctypes type passed or returned. BOOL is C bool on arm64
# ('B'; PyObjC's metadata writes it 'Z'). C strings come back as c_void_p and are read with
# ctypes.string_at, so ctypes never converts or frees them.
ENCODINGS: dict[str, Any] = {
    "v": None,
    "@": ctypes.c_void_p,
    "#": ctypes.c_void_p,
    ":": ctypes.c_void_p,
    "@?": ctypes.c_void_p,  # a block; we only ever pass nil
    "Q": ctypes.c_uint64,
    "q": ctypes.c_int64,
    "B": ctypes.c_bool,
    "Z": ctypes.c_bool,
    "d": ctypes.c_double,
    "^v": ctypes.c_void_p,
    "r^v": ctypes.c_void_p,
    "r*": ctypes.c_void_p,
    "^@": ctypes.POINTER(ctypes.c_void_p),
    "^Q": ctypes.POINTER(ctypes.c_uint64),
    "{MTLSize=QQQ}": MTLSize,
    "{_NSRange=QQ}": NSRange,
}


@dataclass(frozen=True)
class Selector:
    """One selector the bridge sends: who receives it and its type encodings (return, then arguments)."""

    receiver: str  # a protocol (MTLDevice...) or a class (MTLCompileOptions, NSString...)
    name: str
    retval: str
    args: tuple[str, ...] = ()
    returns: str = "none"  # ownership of a returned object: "owned" (+1), "autoreleased" (+0), "none"


def _s(receiver: str, name: str, retval: str, *args: str, returns: str = "none") -> Selector:
    return Selector(receiver, name, retval, args, returns)


# Every selector the metal backend sends, and nothing else (sending an undeclared one is a KeyError).
SELECTORS: dict[str, Selector] = {s.name: s for s in [
    # root class and Foundation
    _s("NSObject", "alloc", "@", returns="owned"),
    _s("NSObject", "init", "@", returns="owned"),  # consumes the alloc'd +1 and returns it
    _s("NSObject", "retain", "@"),
    _s("NSObject", "release", "v"),
    _s("NSString", "initWithBytes:length:encoding:", "@", "r^v", "Q", "Q", returns="owned"),
    _s("NSString", "UTF8String", "r*"),
    _s("NSError", "localizedDescription", "@", returns="autoreleased"),
    _s("NSURL", "fileURLWithPath:", "@", "@", returns="autoreleased"),
    # MTLDevice
    _s("MTLDevice", "name", "@", returns="autoreleased"),
    _s("MTLDevice", "newCommandQueue", "@", returns="owned"),
    _s("MTLDevice", "newLibraryWithSource:options:error:", "@", "@", "@", "^@", returns="owned"),
    _s("MTLDevice", "newComputePipelineStateWithFunction:error:", "@", "@", "^@", returns="owned"),
    _s("MTLDevice", "newBufferWithLength:options:", "@", "Q", "Q", returns="owned"),
    _s("MTLDevice", "newBufferWithBytesNoCopy:length:options:deallocator:", "@", "^v", "Q", "Q", "@?",
       returns="owned"),
    _s("MTLDevice", "hasUnifiedMemory", "Z"),
    _s("MTLDevice", "supportsFamily:", "Z", "q"),
    _s("MTLDevice", "maxThreadgroupMemoryLength", "Q"),
    # MTLCompileOptions (a class)
    _s("MTLCompileOptions", "setLanguageVersion:", "v", "Q"),
    _s("MTLCompileOptions", "setMathMode:", "v", "q"),
    _s("MTLCompileOptions", "setMathFloatingPointFunctions:", "v", "q"),
    _s("MTLCompileOptions", "setRequiredThreadsPerThreadgroup:", "v", "{MTLSize=QQQ}"),
    # MTLLibrary, MTLComputePipelineState
    _s("MTLLibrary", "newFunctionWithName:", "@", "@", returns="owned"),
    _s("MTLComputePipelineState", "maxTotalThreadsPerThreadgroup", "Q"),
    _s("MTLComputePipelineState", "threadExecutionWidth", "Q"),
    _s("MTLComputePipelineState", "staticThreadgroupMemoryLength", "Q"),
    # MTLCommandQueue, MTLCommandBuffer
    _s("MTLCommandQueue", "commandBuffer", "@", returns="autoreleased"),
    _s("MTLCommandBuffer", "computeCommandEncoder", "@", returns="autoreleased"),
    _s("MTLCommandBuffer", "commit", "v"),
    _s("MTLCommandBuffer", "waitUntilCompleted", "v"),
    _s("MTLCommandBuffer", "status", "q"),
    _s("MTLCommandBuffer", "error", "@", returns="autoreleased"),
    _s("MTLCommandBuffer", "GPUStartTime", "d"),
    _s("MTLCommandBuffer", "GPUEndTime", "d"),
    # MTLComputeCommandEncoder
    _s("MTLComputeCommandEncoder", "setComputePipelineState:", "v", "@"),
    _s("MTLComputeCommandEncoder", "setBuffers:offsets:withRange:", "v", "^@", "^Q", "{_NSRange=QQ}"),
    _s("MTLComputeCommandEncoder", "setBytes:length:atIndex:", "v", "^v", "Q", "Q"),
    _s("MTLComputeCommandEncoder", "setThreadgroupMemoryLength:atIndex:", "v", "Q", "Q"),
    _s("MTLComputeCommandEncoder", "dispatchThreadgroups:threadsPerThreadgroup:", "v", "{MTLSize=QQQ}",
       "{MTLSize=QQQ}"),
    _s("MTLComputeCommandEncoder", "dispatchThreads:threadsPerThreadgroup:", "v", "{MTLSize=QQQ}",
       "{MTLSize=QQQ}"),
    _s("MTLComputeCommandEncoder", "endEncoding", "v"),
    _s("MTLComputeCommandEncoder", "useResources:count:usage:", "v", "^@", "Q", "Q"),
    # MTLBuffer
    _s("MTLBuffer", "contents", "^v"),
    _s("MTLBuffer", "gpuAddress", "Q"),
    # GPU capture
    _s("MTLCaptureManager", "sharedCaptureManager", "@", returns="autoreleased"),
    _s("MTLCaptureManager", "supportsDestination:", "Z", "q"),
    _s("MTLCaptureManager", "startCaptureWithDescriptor:error:", "Z", "@", "^@"),
    _s("MTLCaptureManager", "stopCapture", "v"),
    _s("MTLCaptureDescriptor", "setCaptureObject:", "v", "@"),
    _s("MTLCaptureDescriptor", "setDestination:", "v", "q"),
    _s("MTLCaptureDescriptor", "setOutputURL:", "v", "@"),
]}

# C functions called directly: name -> (library, return encoding, argument encodings).
C_FUNCTIONS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "objc_getClass": ("objc", "#", ("r*",)),
    "sel_registerName": ("objc", ":", ("r*",)),
    "objc_autoreleasePoolPush": ("objc", "^v", ()),
    "objc_autoreleasePoolPop": ("objc", "v", ("^v",)),
    "MTLCreateSystemDefaultDevice": ("metal", "@", ()),  # NS_RETURNS_RETAINED: +1
}

# C strings passed to objc_getClass / sel_registerName.
_C_STRING_ARGS = {"objc_getClass", "sel_registerName"}


class ObjCRuntime(Protocol):
    """What the bridge needs from libobjc: senders for a C prototype, and plain C functions.

    ``SystemRuntime`` is the real one (macOS); tests use a recording stand-in with the same two
    methods, so the bridge's own code runs unchanged in both.
    """

    def msg_sender(self, restype: Any, argtypes: tuple[Any, ...]) -> Callable[..., Any]: ...

    def c_function(self, library: str, name: str, restype: Any, argtypes: tuple[Any, ...]) -> Callable[..., Any]: ...


class SystemRuntime:
    """libobjc, Metal and Foundation loaded with ctypes (macOS only)."""

    PATHS = {
        "objc": "/usr/lib/libobjc.A.dylib",
        "metal": "/System/Library/Frameworks/Metal.framework/Metal",
        "foundation": "/System/Library/Frameworks/Foundation.framework/Foundation",
    }

    def __init__(self) -> None:
        self.libs = {k: ctypes.CDLL(p) for k, p in self.PATHS.items()}
        self._msg_send = ctypes.cast(self.libs["objc"].objc_msgSend, ctypes.c_void_p).value

    def msg_sender(self, restype: Any, argtypes: tuple[Any, ...]) -> Callable[..., Any]:
        """``objc_msgSend`` cast to ``restype (*)(id, SEL, argtypes...)`` (non-variadic, as arm64 requires)."""
        proto = ctypes.CFUNCTYPE(restype, ctypes.c_void_p, ctypes.c_void_p, *argtypes)
        return proto(self._msg_send)

    def c_function(self, library: str, name: str, restype: Any, argtypes: tuple[Any, ...]) -> Callable[..., Any]:
        """A C function with an explicit prototype."""
        address = ctypes.cast(getattr(self.libs[library], name), ctypes.c_void_p).value
        return ctypes.CFUNCTYPE(restype, *argtypes)(address)


class ObjCError(RuntimeError):
    """An Objective-C call failed; the message carries the NSError's localizedDescription."""


class ObjCBridge:
    """Sends declared selectors through cached, correctly typed senders."""

    def __init__(self, runtime: ObjCRuntime) -> None:
        self.runtime = runtime
        self._senders: dict[tuple[str, tuple[str, ...]], Callable[..., Any]] = {}
        self._sels: dict[str, int] = {}
        self._classes: dict[str, int] = {}
        self._c: dict[str, Callable[..., Any]] = {}
        self._pool_depth = 0

    # -- C functions, selectors, classes ---------------------------------------------------------
    def c(self, name: str) -> Callable[..., Any]:
        """The C function ``name`` from C_FUNCTIONS, bound once."""
        fn = self._c.get(name)
        if fn is None:
            library, ret, args = C_FUNCTIONS[name]
            argtypes = tuple(ctypes.c_char_p if name in _C_STRING_ARGS else ENCODINGS[a] for a in args)
            fn = self._c[name] = self.runtime.c_function(library, name, ENCODINGS[ret], argtypes)
        return fn

    def sel(self, name: str) -> int:
        """The registered SEL for ``name`` (cached)."""
        s = self._sels.get(name)
        if s is None:
            s = self._sels[name] = int(self.c("sel_registerName")(name.encode()) or 0)
        return s

    def cls(self, name: str) -> int:
        """The class object ``name``; ObjCError if the runtime does not know it."""
        c = self._classes.get(name)
        if c is None:
            c = int(self.c("objc_getClass")(name.encode()) or 0)
            if not c:
                raise ObjCError(f"Objective-C class {name} not found (is the framework loaded?)")
            self._classes[name] = c
        return c

    def method(self, name: str) -> tuple[Callable[..., Any], int]:
        """``(sender, SEL)`` for a declared selector: call ``sender(receiver, SEL, *args)``."""
        spec = SELECTORS[name]
        key = (spec.retval, spec.args)
        fn = self._senders.get(key)
        if fn is None:
            fn = self._senders[key] = self.runtime.msg_sender(ENCODINGS[spec.retval],
                                                              tuple(ENCODINGS[a] for a in spec.args))
        return fn, self.sel(name)

    def send(self, receiver: int, name: str, *args: Any) -> Any:
        """Send a declared selector to a non-nil receiver."""
        if not receiver:
            raise ObjCError(f"sending {name} to nil")
        fn, sel = self.method(name)
        return fn(receiver, sel, *args)

    # -- ownership -------------------------------------------------------------------------------
    def retain(self, obj: int) -> int:
        """Take a +1 reference to an autoreleased (+0) object we keep."""
        self.send(obj, "retain")
        return obj

    def release(self, obj: int | None) -> None:
        """Drop a reference we own (no-op for nil)."""
        if obj:
            self.send(obj, "release")

    @contextmanager
    def autorelease_pool(self) -> Iterator[None]:
        """Push an autorelease pool for calls that return +0 objects; popped on exit."""
        token = self.c("objc_autoreleasePoolPush")()
        self._pool_depth += 1
        try:
            yield
        finally:
            self._pool_depth -= 1
            self.c("objc_autoreleasePoolPop")(token)

    def new(self, class_name: str) -> int:
        """``[[Class alloc] init]``: an owned (+1) instance."""
        obj = self.send(self.send(self.cls(class_name), "alloc"), "init")
        if not obj:
            raise ObjCError(f"[[{class_name} alloc] init] returned nil")
        return int(obj)

    # -- strings and errors ----------------------------------------------------------------------
    def nsstring(self, text: str) -> int:
        """An owned NSString with ``text`` (UTF-8)."""
        data = text.encode()
        obj = self.send(self.send(self.cls("NSString"), "alloc"), "initWithBytes:length:encoding:",
                        data, len(data), NSUTF8StringEncoding)
        if not obj:
            raise ObjCError("could not create an NSString (invalid UTF-8?)")
        return int(obj)

    def string(self, nsstring: int | None) -> str:
        """The text of an NSString (empty for nil)."""
        if not nsstring:
            return ""
        ptr = self.send(nsstring, "UTF8String")
        return ctypes.string_at(ptr).decode(errors="replace") if ptr else ""

    def error_text(self, nserror: int | None) -> str:
        """``localizedDescription`` of an NSError (call inside an autorelease pool)."""
        if not nserror:
            return "unknown error (no NSError returned)"
        return self.string(self.send(nserror, "localizedDescription"))
