"""mpathlab: Linux device-mapper multipath path selection, in Python.

Layout:
  mpathlab.selectors  the path selectors (dm-ps-*.c) and their registry
  mpathlab.target     the multipath target (dm-mpath.c): table, state, status
  mpathlab.sim        the discrete-event storage simulator
  mpathlab.workload   fio job files and topology files
  mpathlab.report     fio-style JSON and terminal tables
  mpathlab.scenarios  shipped scenarios reproducing the seed tables
  mpathlab.cli        the ``mpathlab`` command
"""
__version__ = "0.1.0"
