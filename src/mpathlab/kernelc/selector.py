"""A kernel selector built from C, wrapped as an mpathlab PathSelector.

One :class:`CLibrary` per shared library (module_init runs once, the
registered ``struct path_selector_type`` is read back); one generated
subclass of :class:`CSelector` per library, so the type-level attributes
(``table_args``, ``info_args``, ``features`` -> ``uses_hr_timer()``) are the
C type's own.  Each instance is one ``struct path_selector``: every call
passes the injected clock (ktime_get_ns; sched_clock for select_path), the
submitting CPU and the instance's CPU topology down to the shim.

Paths are the caller's objects, as for the Python selectors; each gets a
``struct dm_path`` on the C side.  A refused argument becomes a
SelectorError carrying the selector's ``*error`` string and errno.  printk
output (DMWARN, DMERR, DMINFO) is captured: forwarded to the logger
``mpathlab.kernelc.NAME`` and kept in ``CLibrary.dmesg``.
"""
from __future__ import annotations

import ctypes
import logging
import os
import threading
from typing import Dict, List, Optional, Tuple

from ..kernel import U64
from ..selectors.base import PathSelector, SelectorError, check_status_kind
from ..selectors.io_affinity import CpuTopology
from .build import Built, BuildError

_STATUS_TYPE = {"info": 0, "table": 1, "ima": 2}
_LEVELS = {"0": logging.CRITICAL, "1": logging.CRITICAL, "2": logging.CRITICAL, "3": logging.ERROR,
           "4": logging.WARNING, "5": logging.INFO, "6": logging.INFO, "7": logging.DEBUG}
STATUS_MAXLEN = 4096
DMESG_KEEP = 1000

_u64, _vp, _int, _uint, _size = ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_size_t
_PROTOS = {
    "mpl_load": (_int, []),
    "mpl_type_name": (ctypes.c_char_p, []),
    "mpl_type_features": (_uint, []),
    "mpl_type_table_args": (_uint, []),
    "mpl_type_info_args": (_uint, []),
    "mpl_type_hooks": (_int, []),
    "mpl_create": (_vp, [_uint, ctypes.POINTER(ctypes.c_char_p), _uint, ctypes.POINTER(_int), _u64, _u64,
                         ctypes.POINTER(_int)]),
    "mpl_destroy": (None, [_vp]),
    "mpl_add_path": (_int, [_vp, _int, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p),
                            ctypes.POINTER(_vp), _u64]),
    "mpl_free_path": (None, [_vp]),
    "mpl_select": (_vp, [_vp, _size, _u64, _u64, _int]),
    "mpl_fail": (None, [_vp, _vp, _u64]),
    "mpl_reinstate": (_int, [_vp, _vp, _u64]),
    "mpl_start_io": (_int, [_vp, _vp, _size, _u64]),
    "mpl_end_io": (_int, [_vp, _vp, _size, _u64, _u64]),
    "mpl_status": (_int, [_vp, _vp, _int, ctypes.c_char_p, _uint, _u64]),
    "mpl_dmesg_take": (_int, [ctypes.c_char_p, _int]),
    "mpl_guard_start": (_int, [ctypes.c_char_p, _uint]),
}

# A C selector's call that runs longer than this is reported and ends the run (exit 6): a
# select_path that never returns would otherwise hang mpathlab.  Wall-clock milliseconds per call.
CALL_BUDGET_ENV = "MPATHLAB_C_CALL_BUDGET_MS"
CALL_BUDGET_MS = 10000
EXIT_SELECTOR = 6       # the shim's MPL_EXIT_SELECTOR: a C selector crashed or overran its call budget


def call_budget_ms() -> int:
    """MPATHLAB_C_CALL_BUDGET_MS (decimal digits, 0 turns the watchdog off), else 10 s."""
    text = os.environ.get(CALL_BUDGET_ENV)
    if text is None or text == "":
        return CALL_BUDGET_MS
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise BuildError("%s=%r: a whole number of milliseconds (0 turns the watchdog off) up to 999999999"
                         % (CALL_BUDGET_ENV, text[:40]))
    return int(text)


def _c_arg(a: str) -> bytes:
    """A table token as the kernel sees it: bytes (Latin-1 when it fits, so NBSP is one byte)."""
    try:
        return str(a).encode("latin-1")
    except UnicodeEncodeError:
        return str(a).encode("utf-8")


def _argv(args) -> Tuple[int, "ctypes.Array"]:
    vals = [_c_arg(a) for a in args]
    return len(vals), (ctypes.c_char_p * (len(vals) + 1))(*vals, None)


class CLibrary:
    """One built selector library, loaded and initialised (module_init)."""

    def __init__(self, built: Built):
        self.built = built
        try:
            dll = ctypes.CDLL(built.so_path)
        except OSError as e:
            raise BuildError("cannot load %s: %s" % (built.so_path, e)) from None
        for fname, (res, args) in _PROTOS.items():
            fn = getattr(dll, fname)
            fn.restype = res
            fn.argtypes = args
        self.dll = dll
        self.lock = threading.RLock()
        self.dmesg: List[Tuple[str, str]] = []   # (level digit, text) as printk got them
        self.dmesg_count = 0                      # lines ever captured (dmesg keeps the last ones)
        self._dmesg_len = ctypes.c_int.in_dll(dll, "mpl_dmesg_len")
        self._dmesg_buf = ctypes.create_string_buffer(65536)
        label = "%s (%s)" % (os.path.basename(built.c_file)[:-2], built.c_file)
        dll.mpl_guard_start(label.encode("utf-8", "replace")[:590], call_budget_ms())
        with self.lock:
            r = dll.mpl_load()
            self.drain()
        if r:
            raise BuildError("%s: module_init registered no path selector (returned %d)" % (built.c_file, r))
        self.kernel_name = dll.mpl_type_name().decode("latin-1")
        dll.mpl_guard_start(("%s (%s)" % (self.kernel_name, built.c_file)).encode("utf-8", "replace")[:590], 0)
        self.log = logging.getLogger("mpathlab.kernelc." + self.kernel_name)
        for level, text in self.dmesg:
            self.log.log(_LEVELS.get(level, logging.INFO), "%s", text)
        self.features = dll.mpl_type_features()
        self.table_args = dll.mpl_type_table_args()
        self.info_args = dll.mpl_type_info_args()
        self.hooks = dll.mpl_type_hooks()

    def drain(self) -> List[Tuple[str, str]]:
        """Collect printk lines written since the last call."""
        if not self._dmesg_len.value:
            return []
        n = self.dll.mpl_dmesg_take(self._dmesg_buf, len(self._dmesg_buf))
        out = []
        for rec in self._dmesg_buf.raw[:n].decode("latin-1").splitlines():
            if rec:
                out.append((rec[0], rec[1:]))
        self.dmesg.extend(out)
        self.dmesg_count += len(out)
        del self.dmesg[:-DMESG_KEEP]
        if getattr(self, "log", None) is not None:
            for level, text in out:
                self.log.log(_LEVELS.get(level, logging.INFO), "%s", text)
        return out


class CSelector(PathSelector):
    """Base of the generated per-library selector types."""

    lib: CLibrary = None  # type: ignore[assignment]
    kernel_name: str = ""
    source: str = ""

    def __init__(self, args=(), *, clock=None, select_clock=None, cpu=None, topology=None, **env):
        super().__init__(args, clock=clock)
        # sched_clock() (HST's select clock in 5.8-5.17) reads select_clock when given.
        self.select_clock = select_clock or self.clock
        self._cpu = cpu or (lambda: 0)
        self.topology = topology or CpuTopology()
        self._info: Dict[object, int] = {}      # path -> struct dm_path (its address)
        self._path_of: Dict[int, object] = {}
        self._ps = None
        self._status_buf = ctypes.create_string_buffer(STATUS_MAXLEN)
        lib = self.lib
        argc, argv = _argv(args)
        n = self.topology.nr_cpu_ids
        node_of = (ctypes.c_int * n)(*self.topology.node_of)
        ret = ctypes.c_int(0)
        with lib.lock:
            ps = lib.dll.mpl_create(argc, argv, n, node_of, self.clock() & U64, self.select_clock() & U64,
                                    ctypes.byref(ret))
            lib.drain()
        if not ps:
            raise SelectorError(None, errno=-ret.value if ret.value < 0 else ret.value,
                                detail="%s create() returned %d" % (self.kernel_name, ret.value))
        self._ps = ps

    def __del__(self):
        try:
            lib = self.lib
            if self._ps:
                with lib.lock:
                    lib.dll.mpl_destroy(self._ps)
                self._ps = None
            for ptr in self._path_of:
                lib.dll.mpl_free_path(ptr)
            self._path_of = {}
        except Exception:  # interpreter shutdown
            pass

    def _ptr(self, path) -> int:
        try:
            return self._info[path]
        except KeyError:
            raise KeyError("path %r was never added to this %s selector" % (path, self.name)) from None

    # -- per-path lifecycle -------------------------------------------------
    def add_path(self, path, args=()):
        if path in self._info:
            raise ValueError("path %r is already in this %s selector" % (path, self.name))
        lib = self.lib
        argc, argv = _argv(args)
        err = ctypes.c_char_p()
        out = ctypes.c_void_p()
        with lib.lock:
            r = lib.dll.mpl_add_path(self._ps, argc, argv, ctypes.byref(err), ctypes.byref(out),
                                     self.clock() & U64)
            lib.drain()
        if r:
            msg = err.value.decode("latin-1") if err.value is not None else None
            raise SelectorError(msg, errno=-r if r < 0 else r)
        self._info[path] = out.value
        self._path_of[out.value] = path

    def fail_path(self, path):
        ptr = self._ptr(path)
        lib = self.lib
        with lib.lock:
            lib.dll.mpl_fail(self._ps, ptr, self.clock() & U64)
            lib.drain()

    def reinstate_path(self, path):
        ptr = self._ptr(path)
        lib = self.lib
        with lib.lock:
            r = lib.dll.mpl_reinstate(self._ps, ptr, self.clock() & U64)
            lib.drain()
        return r

    # -- I/O ---------------------------------------------------------------
    def select_path(self, nr_bytes=0):
        cpu = self._cpu()
        if not 0 <= cpu < self.topology.nr_cpu_ids:
            raise ValueError("CPU %d is not below nr_cpu_ids %d" % (cpu, self.topology.nr_cpu_ids))
        lib = self.lib
        with lib.lock:
            ptr = lib.dll.mpl_select(self._ps, nr_bytes & U64, self.clock() & U64, self.select_clock() & U64, cpu)
            if lib._dmesg_len.value:
                lib.drain()
        if ptr is None:
            return None
        return self._path_of[ptr]

    def start_io(self, path, nr_bytes):
        lib = self.lib
        with lib.lock:
            lib.dll.mpl_start_io(self._ps, self._info[path], nr_bytes & U64, self.clock() & U64)
            if lib._dmesg_len.value:
                lib.drain()

    def end_io(self, path, nr_bytes, start_time_ns):
        lib = self.lib
        with lib.lock:
            lib.dll.mpl_end_io(self._ps, self._info[path], nr_bytes & U64, start_time_ns & U64, self.clock() & U64)
            if lib._dmesg_len.value:
                lib.drain()

    # -- status ------------------------------------------------------------
    def status(self, path, kind="info"):
        kind = check_status_kind(kind)
        ptr = None if path is None else self._ptr(path)
        lib = self.lib
        buf = self._status_buf
        with lib.lock:
            sz = lib.dll.mpl_status(self._ps, ptr, _STATUS_TYPE[kind], buf, STATUS_MAXLEN, self.clock() & U64)
            lib.drain()
        return buf.raw[:max(0, min(sz, STATUS_MAXLEN))].decode("latin-1")

    def valid_order(self):
        raise NotImplementedError("a C selector's private lists are not visible to mpathlab")


# Like any library: silent unless the application configures logging.
logging.getLogger("mpathlab.kernelc").addHandler(logging.NullHandler())

_classes: Dict[str, type] = {}
_libs: Dict[str, CLibrary] = {}
_lock = threading.Lock()


def selector_class(built: Built, name: str) -> type:
    """The PathSelector subclass for a built library, registered under ``name`` by the caller."""
    with _lock:
        cls = _classes.get(built.so_path)
        if cls is not None:
            return cls
        lib = _libs.get(built.so_path) or CLibrary(built)
        _libs[built.so_path] = lib
        cls = type("CSelector_" + lib.kernel_name.replace("-", "_"), (CSelector,), {
            "lib": lib, "name": name, "kernel_name": lib.kernel_name, "source": built.c_file,
            "version": None, "table_args": lib.table_args, "info_args": lib.info_args,
            "features": lib.features, "has_io_hooks": bool(lib.hooks & 3),
        })
        _classes[built.so_path] = cls
        return cls
