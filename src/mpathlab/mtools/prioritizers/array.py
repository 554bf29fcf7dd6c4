"""Array-specific prioritizers, at the level the path topology can feed them.

multipath-tools reads each of these from a vendor SCSI page or command; a simulated path
has no such page, so each is computed from what the topology says about the path: its
ALUA/ANA state, whether its controller owns the LUN (``owner``) and whether it is the
LUN's preferred path (``preferred``), and its transport (``protocol``).  Defaults when
the topology says nothing: a path is owner and preferred when its ALUA state is
active/optimized or when it has no ALUA state at all.

- rdac (VPD page 0xC9): 2 when the receiving controller owns the volume, plus 4 on a
  preferred path or 1 on a secondary one (so 6 / 1 in the usual layout).
- hp_sw (TEST UNIT READY): 4 active, 2 standby (NOT READY, 04/02), 0 failed.
- emc (VPD page 0xC0): the LUN state on this SP (2 owned, 1 bound) plus 2 when this SP is
  the LUN's default owner.
- ontap (NetApp GVA pages): 4 on a direct FCP path, 1 on a proxy (partner) path, 2 over
  software iSCSI, 3 over hardware iSCSI (protocol "scsi:iscsi" is read as software).
- hds (Hitachi modular INQUIRY): 1 when the controller's and the LDEV's parity agree
  (the owning controller), else 0.
- ana (NVMe ANA log): 50 optimized, 10 non-optimized, 1 inaccessible or changing,
  0 persistent loss; the SCSI names of the topology map onto ANA's (standby and
  unavailable are inaccessible, transitioning is changing, offline is persistent loss).
A path whose link is down cannot be asked: an error (-1), the caller keeps the old value.
"""
from . import Prioritizer, register


def owner(path) -> bool:
    v = getattr(path, "owner", None)
    if v is not None:
        return v
    return path.alua_state in (None, "active/optimized")


def preferred(path) -> bool:
    v = getattr(path, "preferred", None)
    return owner(path) if v is None else v


@register
class Rdac(Prioritizer):
    name = "rdac"

    def getprio(self, path, args, env):
        if path.link_down:
            return -1
        return (2 if owner(path) else 0) | (4 if preferred(path) else 1)


@register
class HpSw(Prioritizer):
    name = "hp_sw"

    def getprio(self, path, args, env):
        if path.link_down:
            return 0
        if path.alua_state in ("standby",) or not owner(path):
            return 2
        if path.alua_state in ("unavailable", "offline"):
            return 0
        return 4


@register
class Emc(Prioritizer):
    name = "emc"

    def getprio(self, path, args, env):
        if path.link_down:
            return -1
        return (2 if owner(path) else 1) + (2 if preferred(path) else 0)


@register
class Ontap(Prioritizer):
    name = "ontap"

    def getprio(self, path, args, env):
        if path.link_down:
            return -1
        if getattr(path, "protocol", "").startswith("scsi:iscsi"):
            return 2
        return 4 if owner(path) else 1


@register
class Hds(Prioritizer):
    name = "hds"

    def getprio(self, path, args, env):
        if path.link_down:
            return -1
        return 1 if owner(path) else 0


ANA = {"active/optimized": 50, "active/non-optimized": 10, "standby": 1, "unavailable": 1,
       "transitioning": 1, "lba-dependent": 1, "offline": 0}


@register
class Ana(Prioritizer):
    name = "ana"

    def getprio(self, path, args, env):
        if path.link_down or path.alua_state is None:
            return -1
        return ANA[path.alua_state]
