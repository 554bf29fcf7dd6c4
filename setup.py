"""Builds the optional compiled core (mpathlab._fastcore).

Everything else is in pyproject.toml.  If the C compiler or Python headers
are missing, the build carries on without the extension and mpathlab runs
its pure-Python engine (the reference implementation).
"""
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    def run(self):
        try:
            super().run()
        except Exception as e:  # pragma: no cover - depends on the machine
            print("warning: mpathlab._fastcore not built (%s); using the pure-Python engine" % e)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:  # pragma: no cover
            print("warning: mpathlab._fastcore not built (%s); using the pure-Python engine" % e)


setup(
    # the header is generated from src/mpathlab/sim/boundary.py (python -m mpathlab.sim.boundary --write)
    ext_modules=[Extension("mpathlab._fastcore", ["src/mpathlab/_fastcore.c"],
                           depends=["src/mpathlab/_fastcore_boundary.h"],
                           extra_compile_args=["-O2", "-std=gnu99"], optional=True)],
    cmdclass={"build_ext": OptionalBuildExt},
)
