# Lit configuration for Blueprint's FileCheck suite. `cargo test` runs it
# through test/lit.rs, which sets BLUEPRINT_BIN_DIR to the freshly built
# tools; run one test by hand with
#   BLUEPRINT_BIN_DIR=target/debug lit -v test/Dialect/Dist/ops.mlir
import os

import lit.formats

config.name = "Blueprint"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "lit.rs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)

repo_root = os.path.dirname(config.test_source_root)
# Relative to the directory lit was started in (tests run elsewhere).
bin_dir = os.path.abspath(os.environ.get("BLUEPRINT_BIN_DIR", os.path.join(repo_root, "target", "debug")))
llvm_bin = os.environ.get("LLVM_BIN_DIR", "/usr/lib/llvm-22/bin")
config.test_exec_root = os.environ.get(
    "BLUEPRINT_LIT_OUT", os.path.join(repo_root, "target", "lit")
)

config.environment["PATH"] = os.pathsep.join(
    [bin_dir, llvm_bin, config.environment.get("PATH", os.environ.get("PATH", ""))]
)
# The independent oracle data (Calculon, GenZ), kept in the repository.
config.substitutions.append(("%oracles", os.path.join(config.test_source_root, "oracles")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("%mlir_opt", os.path.join(llvm_bin, "mlir-opt")))

# libblueprint.so (tools/build-shared.sh; test/lit.rs builds it first) for
# the C API, C, Python and mlir-opt plugin tests.
shared_lib = os.environ.get("BLUEPRINT_SHARED_LIB", os.path.join(repo_root, "target", "shared", "debug", "lib", "libblueprint.so"))
if os.path.exists(shared_lib):
    config.available_features.add("blueprint-shared")
    config.substitutions.append(("%blueprint_lib_dir", os.path.dirname(shared_lib)))
    config.substitutions.append(("%blueprint_lib", shared_lib))
    # The library's profile, as tools/build-shared.sh takes it.
    profile_flag = "--release" if os.path.basename(os.path.dirname(os.path.dirname(shared_lib))) == "release" else ""
    config.substitutions.append(("%blueprint_profile", profile_flag))
config.substitutions.append(("%repo", repo_root))
config.substitutions.append(("%clang", os.path.join(llvm_bin, "clang")))

# MPI tests (`REQUIRES: mpi`) run where MPICH's `mpirun` starts a trivial
# two-process job; elsewhere lit reports them UNSUPPORTED, with a note.
import shutil
import subprocess


def _mpi_problem():
    mpirun = shutil.which("mpirun", path=config.environment["PATH"])
    if mpirun is None:
        return "no 'mpirun' on PATH (tools/setup.sh installs mpich)"
    try:
        result = subprocess.run(
            [mpirun, "-np", "2", "true"], capture_output=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return "'mpirun -np 2 true' failed: %s" % error
    if result.returncode != 0:
        return "'mpirun -np 2 true' exited with %d: %s" % (
            result.returncode,
            result.stderr.decode(errors="replace").strip()[:200],
        )
    return None


_problem = _mpi_problem()
if _problem is None:
    config.available_features.add("mpi")
else:
    lit_config.note("MPI cannot start, skipping the MPI tests: " + _problem)

# The spec schema test (`REQUIRES: jsonschema`) validates the repository's
# specs with Python's jsonschema (Debian's python3-jsonschema, which
# tools/setup.sh installs); without it lit reports it UNSUPPORTED.
_probe = subprocess.run(["python3", "-c", "import jsonschema"], capture_output=True, env={"PATH": config.environment["PATH"]})
if _probe.returncode == 0:
    config.available_features.add("jsonschema")
else:
    lit_config.note("the spec schema test is UNSUPPORTED: python3 cannot import jsonschema (tools/setup.sh installs python3-jsonschema)")

# The installed library's build files: pkg-config (tools/setup.sh installs
# it) and CMake (optional; without it its test is UNSUPPORTED).
for tool, feature in (("pkg-config", "pkg-config"), ("cmake", "cmake")):
    if shutil.which(tool, path=config.environment["PATH"]):
        config.available_features.add(feature)
    else:
        lit_config.note("no '%s' on PATH: the tests that need it are UNSUPPORTED" % tool)

# Execution tests (`REQUIRES: jax`) compare blueprint-run --train-step with
# the JAX reference in the venv tools/setup-python.sh makes (target/venv);
# without it lit reports them UNSUPPORTED, with a note.
venv_python = os.environ.get("BLUEPRINT_REFERENCE_PYTHON", os.path.join(repo_root, "target", "venv", "bin", "python"))


def _jax_problem():
    if not os.path.exists(venv_python):
        return "no %s (bash tools/setup-python.sh makes it)" % venv_python
    probe = subprocess.run([venv_python, "-c", "import jax, safetensors"], capture_output=True, timeout=120)
    if probe.returncode != 0:
        return "%s cannot import jax and safetensors: %s" % (venv_python, probe.stderr.decode(errors="replace").strip()[-200:])
    return None


jax_problem = _jax_problem()
if jax_problem is None:
    config.available_features.add("jax")
else:
    lit_config.note("execution tests against the JAX reference are UNSUPPORTED: " + jax_problem)
config.substitutions.append(("%refpy", venv_python))
