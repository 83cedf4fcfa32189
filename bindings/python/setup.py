"""Build hook: put libdecree.so inside the package when one is at hand.

The library searched, first found wins: $DECREE_LIBRARY, then the source
tree's build/libdecree.so (``make`` builds it).  When none is there the
package is pure Python and finds the library at import time through
pkg-config or the loader (after ``make install``): decree/_lib.py.
"""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        src = os.environ.get("DECREE_LIBRARY") or os.path.join(
            HERE, "..", "..", "build", "libdecree.so"
        )
        if os.path.isfile(src):
            dst = os.path.join(self.build_lib, "decree", "libdecree.so")
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst)
            print("decree: bundled %s" % os.path.realpath(src))
        else:
            print("decree: no libdecree.so to bundle; found at import time")


setup(cmdclass={"build_py": BuildWithLibrary})
