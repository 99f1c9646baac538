"""The ``mixed-iceberg-changelog-json`` Flink format's jar, built from ``java/changelog-format`` on
first use and cached.

The sink's staging topic (and the changelog source) need this small Java format in Flink's class
path. Nothing is downloaded: ``javac`` compiles the sources against the Flink jars of the PyFlink
this process imports (always the Flink the job runs on) and the classes are zipped into
``<jars>/flink-format/mixed-iceberg-changelog-format-<hash>.jar``, named by a hash of the sources
and of PyFlink's jar names: a jar of that name is used as it is, and a change of either builds a
new one (under a file lock, so concurrent clients build it once) while clients of the old sources
keep theirs. Where no JDK is installed the
build raises :class:`~mixed_iceberg.exceptions.JdkNotFoundError`.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import logging
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from mixed_iceberg.exceptions import ConfigError, JdkNotFoundError

__all__ = ["JAR_PREFIX", "SOURCES", "build_format_jar", "format_jar", "jdk_compiler", "pyflink_home"]

log = logging.getLogger(__name__)

_ROOT = Path(__file__).resolve().parents[2]
#: The format's Java sources (``src/main/java``) and service registration (``src/main/resources``).
SOURCES = _ROOT / "java" / "changelog-format"
#: The jar's name, before its hash.
JAR_PREFIX = "mixed-iceberg-changelog-format"
#: ``javac``'s target: the JDK Flink 2.2 runs on.
_RELEASE = "17"
_OVERRIDE = "MIXED_ICEBERG_FLINK_FORMAT_JAR"


def pyflink_home() -> Path:
    """The installed PyFlink's directory (its ``lib``/``opt`` hold Flink's jars); no JVM starts."""
    spec = importlib.util.find_spec("pyflink")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("PyFlink is not installed: `make install` installs it (the 'flink' extra)")
    return Path(next(iter(spec.submodule_search_locations)))


def jdk_compiler() -> Path:
    """``javac`` from ``JAVA_HOME``, else from ``PATH``.

    Raises:
        JdkNotFoundError: neither has one.
    """
    home = os.environ.get("JAVA_HOME")
    candidates = [Path(home) / "bin" / "javac"] if home else []
    found = shutil.which("javac")
    candidates += [Path(found)] if found else []
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise JdkNotFoundError(
        f"building the Flink changelog format ({SOURCES.relative_to(_ROOT)}) needs a JDK {_RELEASE}: no javac "
        f"under JAVA_HOME ({home or 'unset'}) or on PATH; install one (apt-get install openjdk-{_RELEASE}-jdk-headless) "
        f"or set {_OVERRIDE} to a built jar"
    )


def _fingerprint(sources: Path, flink: Path) -> str:
    """A hash of every source file (path and bytes) and of the names of Flink's jars."""
    digest = hashlib.sha256()
    for path in sorted(p for p in (sources / "src").rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(sources)).encode() + b"\0" + path.read_bytes() + b"\0")
    for jar in sorted(p.name for p in (flink / "lib").glob("*.jar")):
        digest.update(jar.encode() + b"\0")
    return digest.hexdigest()


def build_format_jar(out_dir: Path, *, sources: Path = SOURCES, flink: Path | None = None) -> Path:
    """The format's jar in ``out_dir``, compiled from ``sources`` unless a jar built from the same
    sources and ``flink``'s jars (default: the installed PyFlink's) is there.

    Raises:
        JdkNotFoundError: it must be built and no JDK is installed.
        ConfigError: the sources are missing, or ``javac`` fails (its output in the message).
    """
    flink = flink or pyflink_home()
    if not (sources / "src" / "main" / "java").is_dir():
        raise ConfigError(
            f"no changelog format sources at {sources}: expected a checkout of this project (java/changelog-format)"
        )
    jar = out_dir / f"{JAR_PREFIX}-{_fingerprint(sources, flink)[:16]}.jar"
    if jar.is_file():
        return jar
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not jar.is_file():
            _compile(jdk_compiler(), sources, flink, jar)
            log.info("built %s from %s", jar, sources)
    return jar


def _compile(javac: Path, sources: Path, flink: Path, jar: Path) -> None:
    """``javac`` into a scratch directory beside ``jar``, zipped, then renamed to ``jar`` at once."""
    with tempfile.TemporaryDirectory(prefix="build.", dir=jar.parent) as scratch:
        classes = Path(scratch) / "classes"
        classes.mkdir()
        files = sorted(str(p) for p in (sources / "src" / "main" / "java").rglob("*.java"))
        classpath = os.pathsep.join([str(flink / "lib" / "*"), str(flink / "opt" / "*")])
        command = [str(javac), "-nowarn", "--release", _RELEASE, "-d", str(classes), "-cp", classpath, *files]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ConfigError(f"javac failed building {sources} (exit {done.returncode}):\n{done.stderr[-4000:]}")
        resources = sources / "src" / "main" / "resources"
        built = Path(scratch) / jar.name
        with zipfile.ZipFile(built, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nCreated-By: mixed-iceberg\r\n\r\n")
            for root in (classes, resources):
                for path in sorted(p for p in root.rglob("*") if p.is_file()):
                    archive.write(path, str(path.relative_to(root)))
        os.replace(built, jar)


def format_jar() -> Path:
    """The format's jar: ``MIXED_ICEBERG_FLINK_FORMAT_JAR`` if set, else built on first use into
    ``$MIXED_ICEBERG_JARS_DIR/flink-format`` (default ``<repo>/.jars/flink-format``) and cached.

    Raises:
        ConfigError: ``MIXED_ICEBERG_FLINK_FORMAT_JAR`` names no file, or the build fails.
        JdkNotFoundError: the jar must be built and no JDK is installed.
    """
    listed = os.environ.get(_OVERRIDE)
    if listed:
        if not Path(listed).is_file():
            raise ConfigError(f"{_OVERRIDE}={listed}: no such file", key=_OVERRIDE, value=listed)
        return Path(listed).resolve()
    jars = Path(os.environ.get("MIXED_ICEBERG_JARS_DIR") or _ROOT / ".jars")
    return build_format_jar(jars / "flink-format").resolve()
