"""Which of the barriers before a data movement's writes are needed.

Every data movement through threadgroup memory (a dot's staged operands, a layout conversion, a reduction
across SIMD groups, ...) writes its regions, waits at a barrier, and reads them back. Before the writes, a
barrier is needed only if some thread may still read or write one of those regions: if a region was touched
since the last barrier, in program order, counting the previous iteration of an enclosing loop.

The emitter records the movements as events while it writes the body (a *candidate* barrier before each
movement's writes, the regions each movement touches, every barrier, and the loops and branches around them)
and leaves a marker line where each candidate stands. ``resolve`` walks the events once the body is written
(a loop to a fixed point: what its body touches after its last barrier is touched again at its head) and
says which candidates become barriers. Unneeded candidates are dropped; every other barrier stays.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Region = tuple[str, int, int]  # (array, first byte, end byte): the pool's slices, or a whole separate array

MARKER_PREFIX = "/*enc_barrier_candidate:"
MARKER = MARKER_PREFIX + "{}*/"  # a body line of its own until resolve() decides


def overlaps(a: Region, b: Region) -> bool:
    return a[0] == b[0] and a[1] < b[2] and b[1] < a[2]


@dataclass
class BarrierPlanner:
    # ("cand", id) | ("touch", region) | ("bar",) | ("loop", events) | ("if", [("branch", events), ...])
    events: list = field(default_factory=list)
    regions: dict[int, list[Region]] = field(default_factory=dict)  # candidate id -> the regions its movement writes
    current: int | None = None  # the movement being emitted
    _stack: list = field(default_factory=list)

    def candidate(self) -> int:
        """A movement begins: its candidate barrier's id."""
        cid = len(self.regions)
        self.regions[cid] = []
        self.current = cid
        self.events.append(("cand", cid))
        return cid

    def region(self, region: Region) -> None:
        """The current movement writes ``region``."""
        if self.current is not None:
            self.regions[self.current].append(region)
        self.events.append(("touch", region))

    def barrier(self) -> None:
        """A barrier; the current movement's regions are read after it."""
        self.events.append(("bar",))
        if self.current is not None:
            self.events += [("touch", r) for r in self.regions[self.current]]

    def open(self, kind: str) -> None:
        """A loop body ("loop"), an ``if`` ("if", holding only its "branch"es) or one branch begins."""
        self._stack.append((kind, self.events))
        self.events = []

    def close(self) -> None:
        kind, outer = self._stack.pop()
        outer.append((kind, self.events))
        self.events = outer

    def resolve(self) -> set[int]:
        """The candidates that must be barriers."""
        needed: set[int] = set()
        self._walk(self.events, frozenset(), needed)
        return needed

    def _walk(self, events: list, touched: frozenset, needed: set[int]) -> frozenset:
        i = 0
        while i < len(events):
            ev = events[i]
            if ev[0] == "cand":
                if any(overlaps(r, t) for r in self.regions[ev[1]] for t in touched):
                    needed.add(ev[1])
                    touched = frozenset()
            elif ev[0] == "touch":
                touched = touched | {ev[1]}
            elif ev[0] == "bar":
                touched = frozenset()
            elif ev[0] == "loop":
                head = touched
                for _ in range(8):  # the head only grows: a fixed point within a few rounds
                    trial: set[int] = set()
                    tail = self._walk(ev[1], head, trial)
                    if tail <= head:
                        break
                    head = head | tail
                else:  # never seen; keep every candidate of the loop rather than guess
                    trial = self._all(ev[1])
                needed |= trial
                touched = head | self._walk(ev[1], head, set())  # zero or more iterations
            elif ev[0] == "if":
                out = touched
                for _, branch in ev[1]:
                    out = out | self._walk(branch, touched, needed)
                touched = out
            i += 1
        return touched

    def _all(self, events: list) -> set[int]:
        out: set[int] = set()
        for ev in events:
            if ev[0] == "cand":
                out.add(ev[1])
            elif ev[0] == "loop":
                out |= self._all(ev[1])
            elif ev[0] == "if":
                for _, branch in ev[1]:
                    out |= self._all(branch)
        return out
