"""Path-selection policies beyond the kernel's selectors.

Each module here is an ordinary third-party-style selector: one file, one
``PathSelector`` subclass with the kernel's hooks (add_path, fail_path,
reinstate_path, select_path, start_io, end_io, status), registered by name
on the registry's first lookup miss (``selectors.registry.BUILTIN``), just
before the ``mpathlab.path_selectors`` entry points through which an outside
package registers one.  Nothing in the engine knows them.

- ``p2c``           power of two choices (Mitzenmacher 2001) over queue length or estimated delay
- ``sed``           shortest expected delay with a per-path service rate (bytes/s) learned online
- ``peak-ewma``     Peak-EWMA latency x (outstanding + 1), as in Finagle, Linkerd and tower
- ``prequal``       Prequal's hot-cold rule (Wydrowski et al., NSDI 2024) on local in-flight and latency
- ``hst-latency``   historical-service-time with per-I/O latency samples (fixes fast-path herding)

Randomised policies draw from ``env["rng"]`` (a ``random.Random``), which the
simulator seeds from the run's seed, so runs stay deterministic.
"""
