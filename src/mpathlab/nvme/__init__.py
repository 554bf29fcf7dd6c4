"""NVMe native multipath beside dm-multipath: the kernel's I/O policies (numa,
round-robin, queue-depth; the proposed adaptive one), SPDK's bdev_nvme modes for
comparison, and an NVMe head the simulator runs like the dm target.

    from mpathlab import nvme
    nvme.names()                      # registered policies
    head = nvme.NvmeHead([nvme.Controller("c0", 0), nvme.Controller("c1", 1)], iopolicy="round-robin")
"""
from .head import Controller, NsHead, NsPath, NvmeHead
from .policy import IOPolicy, PolicyError
from .registry import create, lookup, names, register
from . import core  # noqa: E402,F401  (the compiled core runs NvmeHead simulations: fast.register_target)

__all__ = ["Controller", "IOPolicy", "NsHead", "NsPath", "NvmeHead", "PolicyError", "create", "lookup",
           "names", "register"]
