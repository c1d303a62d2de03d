# PlatformIO pre-build script (platformio.ini `extra_scripts`): the firmware stamped with this checkout's
# version (firmware/version.cmake: release, git revision, -dirty) at every build. PlatformIO's Zephyr
# builder runs CMake, and so the stamp, only when zephyr/CMakeLists.txt changes, with a PATH of its own
# tools (no git: the stamp was the bare release), and does not recompile when the force-included header
# changes; so the stamp is written here, with git found on the user's PATH, and also goes on the compiler's
# command line, whose changes it does track (the header's #ifndef yields to it).
import os
import shutil
import subprocess

Import("env")  # noqa: F821  (SCons provides it)

root = env.subst("$PROJECT_DIR")  # noqa: F821
build_dir = env.subst("$BUILD_DIR")  # noqa: F821
header = os.path.join(build_dir, "rig_version.h")
os.makedirs(build_dir, exist_ok=True)
cmake = shutil.which("cmake") or os.path.join(env.PioPlatform().get_package_dir("tool-cmake"), "bin", "cmake")  # noqa: F821
script = os.path.join(root, "firmware", "version.cmake")
git = shutil.which("git") or "git"
subprocess.run([cmake, f"-DROOT={root}", f"-DOUT={header}", f"-DGIT={git}", "-P", script], check=True)
with open(header) as f:
    version = f.read().split('"')[1]
env.Append(CPPDEFINES=[("RIG_FW_VERSION", env.StringifyMacro(version))])  # noqa: F821
print(f"firmware version stamp: {version}")
