"""Builds the wheel of the `magicube` package: pure Python, plus libmagicube.so in magicube/lib/.

The library comes from $MAGICUBE_PREBUILT_LIBRARY when set (CI reuses the build it tested), else
from a CMake build of the repository (target magicube_shared) in $MAGICUBE_CMAKE_BUILD_DIR,
default <repository>/build, configured there first when needed.
"""
import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _library() -> Path:
    prebuilt = os.environ.get("MAGICUBE_PREBUILT_LIBRARY")
    if prebuilt:
        path = Path(prebuilt)
        if not path.is_absolute() and not path.is_file():  # relative to the repository root
            path = ROOT / path
        path = path.resolve()
        if not path.is_file():
            raise RuntimeError(f"MAGICUBE_PREBUILT_LIBRARY={prebuilt}: no such file")
        return path
    build = Path(os.environ.get("MAGICUBE_CMAKE_BUILD_DIR", ROOT / "build")).resolve()
    if not (build / "CMakeCache.txt").exists():
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", *generator])
    subprocess.check_call(["cmake", "--build", str(build), "--target", "magicube_shared", "-j", str(os.cpu_count() or 2)])
    return build / "lib" / "libmagicube.so"


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        dest = Path(self.build_lib) / "magicube" / "lib"
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_library(), dest / "libmagicube.so")  # follows the symlinks


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # a platform wheel: it carries a shared library
        return True


cmdclass = {"build_py": BuildPyWithLibrary}
try:  # one wheel for every Python 3 version: py3-none-<platform>
    from wheel.bdist_wheel import bdist_wheel

    class Bdist(bdist_wheel):
        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = Bdist
except ImportError:
    pass

setup(cmdclass=cmdclass, distclass=BinaryDistribution)
